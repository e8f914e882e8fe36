//! `splice exec`: run work a person just created (a lone task, or a plan's campaign) headless to
//! rest, scoped to it, and say where it stands: the run's final status, the node's step and
//! status, and where its work landed (the target and delivery method, the reviewed commit, the
//! pull request when there is one).
//!
//! `--max-turns N` caps the run's passes (a pass is one turn of read → decide → act → record;
//! the run stops with status `budget` after N). It does not reach into an agent's own turns:
//! an agent command that takes a turn limit gets it from its own config.

use serde::Serialize;

use super::events::Events;
use super::runner::{self, Options, Summary};
use crate::error::{Error, Result};
use crate::model::RunStatus;
use crate::model::bead::DeliveryMethod;
use crate::model::config::{AgentConfig, UsageAdapter};
use crate::model::printable::printable;
use crate::store::Store;

/// What the caller asked of the run.
#[derive(Clone, Debug, Default)]
pub struct ExecOptions {
    /// Cap on the run's passes (`--max-passes`).
    pub max_passes: Option<u64>,
    /// A loop step's iteration limit (`--max-turns`, when positive).
    pub max_turns: Option<u32>,
    /// Keep loop snapshots (`--keep-snapshots`).
    pub keep_snapshots: bool,
    /// `[agent]` for this run only (`--agent sim`); config.toml is neither read for it nor
    /// written.
    pub agent: Option<AgentConfig>,
}

/// The built-in simulated agent in its generic mode (`splice sim-agent --generic`), reporting
/// usage through its usage file.
pub fn sim_agent() -> Result<AgentConfig> {
    let exe = std::env::current_exe().map_err(|e| Error::io("current executable", e))?;
    Ok(AgentConfig {
        command: Some(vec![
            exe.display().to_string(),
            "sim-agent".into(),
            "--generic".into(),
        ]),
        usage: Some(UsageAdapter::File),
        ..AgentConfig::default()
    })
}

/// How an `exec` ended.
#[derive(Serialize, Clone, Debug)]
pub struct ExecResult {
    /// The node the run was scoped to (the task, or the plan's campaign root).
    pub id: String,
    /// The run's final status (`docs/cli.md`).
    pub status: RunStatus,
    /// The node's status: `closed` when its route is complete.
    pub node_status: String,
    /// The step the node is at (its last one once closed).
    pub step: String,
    /// Where its work lands.
    pub target: Option<String>,
    /// `pr` or `direct` (the node's, else its ancestors', else `[delivery] method`, else `pr`).
    pub delivery: String,
    /// The commit its review passed (the work that landed, or is to land).
    pub reviewed_sha: Option<String>,
    pub pr_url: Option<String>,
    /// Children created by a plan, in the plan's topological order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<String>,
    pub run: String,
    pub passes: u64,
    pub dispatches: u64,
    pub tokens: u64,
}

/// Run `id`'s tree to rest.
pub fn run(
    store: &Store,
    id: &str,
    opts: &ExecOptions,
    events: &Events,
) -> Result<(Summary, ExecResult)> {
    let run_opts = Options {
        scope: Some(id.to_string()),
        max_passes: opts.max_passes,
        agent: opts.agent.clone(),
        max_turns: opts.max_turns,
        keep_snapshots: opts.keep_snapshots,
        // `exec` runs with no person at hand: a question of the pass monitor parks the node.
        no_person: true,
        ..Options::default()
    };
    let summary = runner::run(store, &run_opts, events)?;
    let bead = store.read_bead(id)?;
    let p = &bead.pipeline;
    let lineage = store.read_ancestors(&bead)?;
    let target = p
        .target
        .as_deref()
        .or_else(|| lineage.iter().find_map(|b| b.pipeline.target.as_deref()))
        .map(str::to_string);
    let delivery = p
        .delivery
        .or_else(|| lineage.iter().find_map(|b| b.pipeline.delivery))
        .or(store.config()?.delivery.method)
        // The lineage's default (`policy::lineage`).
        .unwrap_or(DeliveryMethod::Pr)
        .as_str()
        .to_string();
    let result = ExecResult {
        id: id.to_string(),
        status: summary.status,
        node_status: bead.status.as_str().to_string(),
        step: p.step.to_string(),
        target,
        delivery,
        reviewed_sha: p.reviewed_sha.as_deref().map(str::to_string),
        pr_url: p.pr_url.as_deref().map(str::to_string),
        children: p
            .split
            .as_ref()
            .map(|s| s.children.iter().map(|c| c.to_string()).collect())
            .unwrap_or_default(),
        run: summary.run.clone(),
        passes: summary.passes,
        dispatches: summary.dispatches,
        tokens: summary.tokens,
    };
    Ok((summary, result))
}

/// The result for a person.
pub fn human(r: &ExecResult) -> String {
    let mut out = format!(
        "exec {}: run {} ended {} ({} passes, {} dispatches, {} tokens)\n",
        r.id,
        r.run,
        r.status.as_str(),
        r.passes,
        r.dispatches,
        r.tokens
    );
    // What the node's bead records (its status, step, target, pull request) is escaped.
    out.push_str(&format!(
        "  node {} at {} ({})\n",
        r.id,
        printable(&r.step),
        printable(&r.node_status)
    ));
    if !r.children.is_empty() {
        out.push_str(&format!("  children {}\n", r.children.join(", ")));
    }
    let target = printable(r.target.as_deref().unwrap_or("(no target)"));
    let how = printable(&r.delivery);
    let landed = match (r.node_status.as_str(), &r.pr_url) {
        (_, Some(url)) => format!("pull request {} into {target}", printable(url)),
        ("closed", None) => format!("landed on {target} ({how})"),
        _ => format!("not landed yet; it lands on {target} ({how})"),
    };
    out.push_str(&format!("  work: {landed}"));
    if let Some(sha) = &r.reviewed_sha {
        out.push_str(&format!(", reviewed commit {}", printable(sha)));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::{ExecResult, human};
    use crate::model::RunStatus;

    #[test]
    fn the_report_escapes_what_the_bead_recorded() {
        let r = ExecResult {
            id: "sp-a".into(),
            status: RunStatus::Escalated,
            node_status: "open\u{1b}[2J".into(),
            step: "implement\nfake".into(),
            target: Some("main".into()),
            delivery: "pr".into(),
            reviewed_sha: None,
            pr_url: Some("https://x/\u{1b}]0;t\u{7}".into()),
            children: Vec::new(),
            run: "r1".into(),
            passes: 1,
            dispatches: 0,
            tokens: 0,
        };
        let text = human(&r);
        assert!(
            text.contains("node sp-a at implement\\nfake (open\\u{1b}[2J)")
                && text.contains("pull request https://x/\\u{1b}]0;t\\u{7} into main"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 3, "{text}");
    }
}
