//! `splice classify "REQUEST"`: the request tier the manifest's rules give a request, and the
//! rule that decided it (`docs/manifest.md`, "Request tiers"). Reads; writes nothing.

use serde::Serialize;

use super::{Global, output};
use crate::error::{Error, Result};
use crate::policy::tier::{Classification, classify};
use crate::store::Store;
use crate::transition::authority::{self, Verb, Who};

/// Classify a request by the manifest's `tiers.classify` rules.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The request: a task's title and description, as `init-task --tier auto` reads them.
    #[arg(value_name = "REQUEST")]
    pub request: String,
    /// Print JSON (`schema_version`, `tier`, `rule`, `rule_name`, `rationale`, `chars`, `route`).
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Answer<'a> {
    #[serde(flatten)]
    classification: &'a Classification,
    /// The route a task of this tier starts on when the tier is named (`tiers.routes`).
    route: &'a str,
}

pub fn run(global: &Global, args: Args) -> Result<i32> {
    // The state directory need not exist: without one, the default manifest's rules apply.
    let store = Store::open_or_plan(global.dir.as_deref())?;
    authority::admit(Verb::Classify, &Who::command_line(store.dir()))?;
    let tiers = store.manifest()?.tiers();
    let c = classify(&args.request, &tiers)
        .ok_or_else(|| Error::Invalid("the manifest's tiers.classify has no final rule".into()))?;
    let route = tiers.routes.get(&c.tier).map_or("", String::as_str);
    if args.json {
        output::print_json(&Answer {
            classification: &c,
            route,
        });
    } else {
        // The rule's name and rationale, and the route, are the manifest's words: escaped.
        output::out(&format!(
            "{}\n{}\nroute: {}\n",
            c.tier,
            output::printable(&c.describe()),
            output::printable(route)
        ));
    }
    Ok(0)
}
