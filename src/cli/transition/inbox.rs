//! A writing agent verb in a sandboxed dispatch (`SPLICE_INBOX` set): `propose`, `split` and
//! `resplit` check their arguments as the local verbs do, send them to the runner through the
//! dispatch's inbox ([`crate::transition::inbox`]) and print its answer: the same output and
//! exit code as the local verb. No store is discovered, locked or written here.

use std::path::Path;

use super::{Verb, cluster};
use crate::cli::output;
use crate::error::{Error, Result};
use crate::transition::inbox::{self, Request};

/// Send `verb` to the runner through `dir` and print what it answered.
pub(super) fn send(verb: Verb, dir: &Path) -> Result<i32> {
    if !dir.is_absolute() || !dir.is_dir() {
        return Err(Error::Invalid(format!(
            "{}={}: not a dispatch's inbox (an absolute path to a directory the runner made); \
             nothing was sent",
            inbox::ENV,
            dir.display()
        )));
    }
    let (call, common) = cluster::call(verb)?;
    let answer = inbox::send(dir, &Request::new(&call, common.bead.id()))?;
    if let Some(out) = &answer.output {
        output::print_json(out);
    }
    if let Some(e) = &answer.error {
        output::err(&format!("splice: {e}\n"));
    }
    Ok(answer.code)
}

/// Is this verb one an agent sends through its inbox?
pub(super) fn sent(verb: &Verb) -> bool {
    matches!(
        verb,
        Verb::Propose { .. } | Verb::Split { .. } | Verb::Resplit { .. }
    )
}
