//! A writing verb in a cluster dispatch (`SPLICE_PROPOSALS` set): `propose`, `split` and
//! `resplit` check their arguments as the local verbs do, then append one line to the proposal
//! file ([`crate::transition::proposals`]) and touch nothing else — no store is discovered,
//! locked or read. Every other writing verb is refused: the runner does the rest.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Common, Verb};
use crate::cli::output;
use crate::error::{Error, Result};
use crate::refusal::Refusal;
use crate::transition::proposals::{self, Call, ChildrenLine, Handed, Line, ProposeLine};
use crate::transition::{propose, split};

/// What `--json` prints.
#[derive(Serialize)]
struct Recorded<'a> {
    recorded: bool,
    verb: &'a str,
    bead: &'a str,
    file: &'a Path,
}

/// The proposal file named by the environment, when this is a cluster dispatch.
pub(super) fn proposal_file() -> Option<PathBuf> {
    std::env::var_os(proposals::ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Record `verb` in the proposal file at `file`.
pub(super) fn record(verb: Verb, file: &Path) -> Result<i32> {
    let (call, common) = call(verb)?;
    let handed = handed()?;
    if !file.is_absolute() {
        return Err(Error::Invalid(format!(
            "{}={}: the proposal file must be an absolute path",
            proposals::ENV,
            file.display()
        )));
    }
    let bead = common.bead.id();
    proposals::append(file, &Line::new(&call, bead, &handed))?;
    if common.json.json {
        output::print_json(&Recorded {
            recorded: true,
            verb: call.verb(),
            bead,
            file,
        });
    } else {
        output::out("recorded; applied when the job ends\n");
    }
    Ok(0)
}

/// The verb's arguments, checked as the local verb checks them before it takes the lock.
pub(super) fn call(verb: Verb) -> Result<(Call, Common)> {
    let children = |path: &Path, common: &Common| -> Result<ChildrenLine> {
        Ok(ChildrenLine {
            children: split::read_children(path)?,
            holder: holder(common),
            expect_seq: common.expect_seq,
            run: common.run.clone().filter(|r| !r.is_empty()),
        })
    };
    match verb {
        Verb::Propose {
            common,
            step,
            artifact,
            result,
            pr_url,
            confidence,
        } => {
            let args = propose::ProposeArgs {
                step,
                artifact,
                result,
                pr_url,
                confidence,
            };
            propose::check_args(&args)?;
            let line = ProposeLine {
                step: args.step,
                artifact: args.artifact,
                result: args.result,
                pr_url: args.pr_url,
                confidence: args.confidence,
                holder: holder(&common),
                expect_seq: common.expect_seq,
                run: common.run.clone().filter(|r| !r.is_empty()),
            };
            Ok((Call::Propose(line), common))
        }
        Verb::Split {
            common,
            children: c,
        } => Ok((Call::Split(children(&c, &common)?), common)),
        Verb::Resplit {
            common,
            children: c,
        } => Ok((Call::Resplit(children(&c, &common)?), common)),
        other => Err(Error::Refused(Refusal::ClusterDispatch {
            bead: super::bead_of(&other).unwrap_or("?").to_string(),
            proposals: true,
        })),
    }
}

fn holder(common: &Common) -> Option<String> {
    common.holder.clone().filter(|h| !h.is_empty())
}

/// What the runner handed this job, from its environment; each one missing or not a number is
/// named.
fn handed() -> Result<Handed> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let (step, attempt, seq, credential) = (
        var("SPLICE_STEP"),
        var("SPLICE_ATTEMPT"),
        var(proposals::SEQ_ENV),
        var(crate::authority::credential::ENV),
    );
    let missing: Vec<&str> = [
        ("SPLICE_STEP", step.is_none()),
        ("SPLICE_ATTEMPT", attempt.is_none()),
        (proposals::SEQ_ENV, seq.is_none()),
        (crate::authority::credential::ENV, credential.is_none()),
    ]
    .into_iter()
    .filter_map(|(k, gone)| gone.then_some(k))
    .collect();
    if !missing.is_empty() {
        return Err(Error::Invalid(format!(
            "{} is set, but {} {} not: a cluster dispatch's environment carries them all; \
             nothing was recorded",
            proposals::ENV,
            missing.join(", "),
            if missing.len() == 1 { "is" } else { "are" }
        )));
    }
    let number = |k: &str, v: &str| {
        Error::Invalid(format!("{k}={v:?} is not a number; nothing was recorded"))
    };
    let (attempt, seq) = (attempt.unwrap_or_default(), seq.unwrap_or_default());
    Ok(Handed {
        step: step.unwrap_or_default(),
        attempt: attempt
            .parse()
            .map_err(|_| number("SPLICE_ATTEMPT", &attempt))?,
        seq: seq.parse().map_err(|_| number(proposals::SEQ_ENV, &seq))?,
        credential: credential.unwrap_or_default(),
    })
}
