//! The words a person reads about a decision, one place for every host (`splice status`, `show`,
//! `ready`, a run's final envelope, the cockpit): why a node acts or rests in a line
//! ([`reason`]), what a person can do next about it, with the exact command where there is one
//! ([`for_action`], [`for_rest`]), and the run status in a sentence ([`headline`]).

use serde::Serialize;

use crate::model::bead::Verdict;
use crate::model::snapshot::Died;
use crate::model::{Action, Bead, Rest, RunStatus};

/// The next step for a node: a sentence, and the command that takes it (if a person acts).
#[derive(Serialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct Next {
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

impl Next {
    fn say(text: impl Into<String>) -> Next {
        Next {
            text: text.into(),
            command: None,
        }
    }

    fn run(text: impl Into<String>, command: impl Into<String>) -> Next {
        Next {
            text: text.into(),
            command: Some(command.into()),
        }
    }
}

/// What the advice needs of a node: its id and step, the artifact a person reviews at its gate,
/// its step's attempt limit, and the reason of its check since entry when that check escalated
/// ([`escalated_check`]; `None` also where the caller has no bead to read it from).
pub struct Node<'a> {
    pub id: &'a str,
    pub step: &'a str,
    pub review: Option<String>,
    pub max_attempts: Option<u32>,
    pub escalated_check: Option<&'a str>,
    /// Of the beads it is blocked by, those not in the store (bd kept a dependency on an issue
    /// it deleted or never exported).
    pub absent: Vec<&'a str>,
    /// The key that clears a dead holder's claim where the words are read (the cockpit's `c`),
    /// named after "clear the claim"; `None` in a command's output.
    pub clear_key: Option<char>,
}

/// The reason of `bead`'s check since entry, when it escalated: the node then rests `escalated`
/// by rule 23, and no run checks it again by itself (`decide` checks again only on new evidence
/// or an approved landing), so a person's verb must.
pub fn escalated_check(bead: &Bead) -> Option<&str> {
    bead.check_since_entry()
        .filter(|c| c.verdict == Verdict::Escalate)
        .map(|c| c.reason.as_str())
}

/// How many ids a line names before it counts the rest: a root of 10,000 children is one line.
pub const NAMED: usize = 3;

/// `ids` for one line: all of them up to [`NAMED`], else the first [`NAMED`] and how many more
/// (`a, b, c and 197 more`).
pub fn some_of<S: std::borrow::Borrow<str>>(ids: &[S]) -> String {
    if ids.len() <= NAMED {
        return ids.join(", ");
    }
    format!("{} and {} more", ids[..NAMED].join(", "), ids.len() - NAMED)
}

/// The run status in a sentence.
pub fn status_line(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Done => "done: the work is closed",
        RunStatus::Budget => "a limit of the run was reached; `splice run` starts a new run",
        RunStatus::Stalled => "the last run's actions kept coming to nothing; see each node below",
        RunStatus::Ready => "there is work to do: `splice run` carries it out",
        RunStatus::Escalated => "a node is parked or cannot go on, and needs a person",
        RunStatus::SuspendedHuman => "waiting for a person (see below what to do)",
        RunStatus::SuspendedRunning => {
            "another runner is at work; nothing to do here until it ends"
        }
        RunStatus::Idle => "nothing to do and nothing waiting",
    }
}

/// The run status in a sentence, told by the nodes' rests (id and rest): a run suspended on
/// claims whose runners died says so — which ones, how it knows, and what releases them — and
/// never that another runner is at work. `alive` answers for a holder the decision did not find
/// dead (`None`: cannot tell): the caller's own probe ([`super::holder::holder_alive`], or the
/// cockpit's).
pub fn headline<'a>(
    status: RunStatus,
    rests: impl IntoIterator<Item = (&'a str, &'a Rest)>,
    alive: impl Fn(&str) -> Option<bool>,
) -> String {
    if status != RunStatus::SuspendedRunning {
        return status_line(status).to_string();
    }
    // (id, how it died) of the proven dead, (id) of the dead not proven, and the others.
    let (mut proven, mut gone, mut live) = (Vec::new(), Vec::new(), Vec::new());
    for (id, rest) in rests {
        let Rest::Running { holder, died, .. } = rest else {
            continue;
        };
        match (died, alive(holder)) {
            (Some(d), _) => proven.push((id, d.text())),
            (None, Some(false)) => gone.push(id),
            _ => live.push(id),
        }
    }
    let mut parts = Vec::new();
    if !proven.is_empty() {
        let ids: Vec<&str> = proven.iter().map(|(id, _)| *id).collect();
        let how: Vec<&str> = proven.iter().map(|(_, how)| how.as_str()).collect();
        let clear = format!(
            "`splice transition release --bead {} --clear --reason \"its runner died\"`",
            ids[0]
        );
        parts.push(match ids.len() {
            1 => format!(
                "the runner that claimed {} has died ({}); `splice run --reclaim-dead` or {clear} \
                 releases its claim",
                ids[0], how[0]
            ),
            _ => format!(
                "the runners that claimed {} have died ({}); `splice run --reclaim-dead` releases \
                 their claims (or {clear}, one by one)",
                some_of(&ids),
                some_of(&how)
            ),
        });
    }
    if !gone.is_empty() {
        parts.push(format!(
            "the runner that claimed {} is no longer running here; `splice transition release \
             --bead {} --clear --reason R` releases its claim",
            some_of(&gone),
            gone[0]
        ));
    }
    if !live.is_empty() {
        parts.push(match parts.is_empty() {
            true => status_line(status).to_string(),
            false => format!("another holder has claimed {}", some_of(&live)),
        });
    }
    match parts.is_empty() {
        true => status_line(status).to_string(),
        false => parts.join("; "),
    }
}

/// One line saying what the node does next, or why it rests: a row's `reason` in `status`,
/// `ready` and `show`.
pub fn reason(action: Option<&Action>, rest: Option<&Rest>) -> String {
    if let Some(a) = action {
        return match a {
            Action::Check { .. } => "check: run the floors".into(),
            Action::Dispatch { attempt, .. } => format!("dispatch (attempt {attempt})"),
            Action::Park { reason, .. } => format!("park: {reason}"),
            Action::Skip { reason, .. } => format!("skip (not applicable): {reason}"),
            Action::Escalate {
                iteration, rule, ..
            } => format!("escalate after iteration {iteration} ({rule})"),
            Action::Rollback {
                iteration, restore, ..
            } => format!("roll back after iteration {iteration} to iteration {restore}"),
            Action::StepBack {
                iteration, reason, ..
            } => format!("step back after iteration {iteration}: {reason}"),
            Action::CleanupFanout {
                bead,
                children,
                own,
            } => {
                let mut of: Vec<&str> = children.iter().map(String::as_str).collect();
                if *own {
                    of.insert(0, bead);
                }
                format!("cleanup-fanout: remove worktrees of {}", of.join(", "))
            }
        };
    }
    let Some(r) = rest else {
        return String::new();
    };
    match r {
        Rest::Running {
            holder,
            since,
            died: Some(d),
            ..
        } => format!(
            "running: claimed by {holder} since {since}, whose runner died ({}) (reclaim it, or \
             clear the claim)",
            d.text()
        ),
        Rest::Running { holder, since, .. } => {
            format!("running: claimed by {holder} since {since} (wait, or clear the claim)")
        }
        Rest::InFlight { since, .. } => format!("in-flight: dispatched since {since}"),
        Rest::Parked { step, reason } => format!("parked on {step}: {reason}"),
        Rest::Blocked { by } => format!("blocked by {}", by.join(", ")),
        Rest::WaitingParent {
            parent,
            parent_step,
        } => format!("waiting-parent: {parent} is at {parent_step}"),
        Rest::AwaitingHuman {
            gate: Some(g),
            land: Some(l),
            ..
        } => format!(
            "awaiting-human: approve landing {} on {} (the {g} step)",
            l.sha.get(..10).unwrap_or(&l.sha),
            l.target
        ),
        Rest::AwaitingHuman {
            gate,
            step,
            autonomy,
            autonomy_source,
            ..
        } => match gate {
            Some(g) => format!(
                "awaiting-human: approve the gate on {g} (autonomy {} from {autonomy_source})",
                autonomy.as_str()
            ),
            None => format!("awaiting-human: {step} has no command; a person does it and proposes"),
        },
        Rest::WaitingChildren { children } => {
            format!("waiting-children: {}", some_of(children))
        }
        Rest::Escalated { reason } => format!("escalated: {reason}"),
        Rest::Backoff { until, attempt } => format!("backoff: attempt {attempt} at {until}"),
        Rest::AwaitingMerge { pr_url } => match pr_url {
            Some(u) => format!("awaiting-merge: {u}"),
            None => "awaiting-merge".into(),
        },
        Rest::Serialized { behind } => format!("serialized behind {behind} (overlapping files)"),
        Rest::Queued => "queued: jobs limit reached".into(),
        Rest::Closed => "closed".into(),
        Rest::Held { by } => format!(
            "held: the run is {} (its action waits for the next run)",
            by.as_str()
        ),
    }
}

/// What happens next for a node that has an action this pass.
pub fn for_action(node: &Node, action: &Action) -> Next {
    match action {
        Action::Check { step, .. } => Next::run(
            format!("its evidence for {step} is checked next"),
            "splice run",
        ),
        Action::Dispatch { step, attempt, .. } => {
            let of = node
                .max_attempts
                .map_or(String::new(), |m| format!(" of {m}"));
            Next::run(
                format!("the agent is dispatched for {step} next (attempt {attempt}{of})"),
                "splice run",
            )
        }
        Action::Park { reason, .. } => {
            Next::run(format!("it is parked next: {reason}"), "splice run")
        }
        Action::Skip { step, reason, .. } => Next::run(
            format!("{step} is skipped next, not applicable: {reason}"),
            "splice run",
        ),
        Action::Escalate {
            step,
            iteration,
            rule,
            ..
        } => Next::run(
            format!(
                "its loop on {step} repeats itself ({rule} after iteration {iteration}): it \
                 escalates next (`[agent] escalation_command`, once per node)"
            ),
            "splice run",
        ),
        Action::Rollback {
            step,
            iteration,
            restore,
            ..
        } => Next::run(
            format!(
                "iteration {iteration} of {step} scored below the first: its worktree is rolled \
                 back to iteration {restore} next"
            ),
            "splice run",
        ),
        Action::StepBack { step, reason, .. } => Next::run(
            format!("its loop on {step} plateaued ({reason}): a step-back analysis runs next"),
            "splice run",
        ),
        Action::CleanupFanout { children, own, .. } => {
            let what = match (own, children.is_empty()) {
                (true, true) => "its worktree and branch are removed next".to_string(),
                (true, false) => format!(
                    "its and its children's ({}) worktrees and branches are removed next",
                    children.join(", ")
                ),
                (false, _) => format!(
                    "its children's worktrees ({}) are removed next",
                    children.join(", ")
                ),
            };
            Next::run(format!("closed; {what}"), "splice run")
        }
    }
}

/// Why an `external:<project>:<capability>` blocker still blocks, and what ships it.
pub fn not_shipped(target: &str) -> String {
    match crate::model::bd::external_ref(target) {
        Some((project, capability)) => format!(
            "{target} is not shipped: done when project {project} (`[bd] external_projects` in \
             .splice/config.toml names its directory) has a closed issue labelled \
             `provides:{capability}` in its .beads/issues.jsonl (`bd ship {capability}` there)"
        ),
        None => format!("{target} is not in the store"),
    }
}

/// Why a node rests, and what a person can do about it. `alive` answers for a claim's holder
/// the decision did not find dead, as in [`headline`].
pub fn for_rest(node: &Node, rest: &Rest, alive: impl Fn(&str) -> Option<bool>) -> Next {
    let id = node.id;
    match rest {
        Rest::Running {
            holder,
            since,
            died,
            ..
        } => running(node, holder, since, died.as_ref(), alive(holder)),
        Rest::InFlight { since, .. } => Next::say(format!("dispatched by this run since {since}")),
        Rest::Parked { step, reason } => Next::run(
            format!(
                "parked at {step}: {reason}; once the cause is fixed, put it back in play (or, if \
                 the node was a mistake, `splice cancel {id} --reason R`)"
            ),
            format!("splice transition unpark --bead {id} --reason \"<what was fixed>\""),
        ),
        Rest::Blocked { by } if !node.absent.is_empty() => {
            let (external, missing): (Vec<&str>, Vec<&str>) = node
                .absent
                .iter()
                .partition(|b| crate::model::bd::external_ref(b).is_some());
            let mut words = format!("waits for {} to be done first", by.join(", "));
            if !missing.is_empty() {
                words.push_str(&format!(
                    "; {} not in the store: import or create it, or remove the dependency \
                     (`splice dep rm {id} ID`)",
                    missing.join(", ")
                ));
            }
            for e in external {
                words.push_str(&format!("; {}", not_shipped(e)));
            }
            Next::say(words)
        }
        Rest::Blocked { by } => Next::say(format!(
            "waits for {} to be done first (closed, not cancelled: a cancelled blocker never is)",
            by.join(", ")
        )),
        Rest::WaitingParent {
            parent,
            parent_step,
        } => Next::say(format!(
            "waits for its parent {parent} to delegate (the parent is at {parent_step})"
        )),
        Rest::AwaitingHuman {
            gate: Some(g),
            land: Some(l),
            ..
        } => Next::run(
            format!(
                "waits for a person to approve landing {} on {} (the {g} step; no autonomy \
                 relaxes it): approve it, or send it back with `splice transition reject --bead \
                 {id} --step {g} --reason \"…\"`",
                l.sha.get(..10).unwrap_or(&l.sha),
                l.target
            ),
            format!("splice transition approve --bead {id} --step {g}"),
        ),
        Rest::AwaitingHuman {
            gate: Some(g),
            autonomy,
            autonomy_source,
            ..
        } => gate(
            node,
            g,
            &format!("autonomy {} from {autonomy_source}", autonomy.as_str()),
        ),
        Rest::AwaitingHuman {
            question: Some(q), ..
        } => Next::run(
            format!("the pass monitor asks: {q}"),
            format!("splice transition guide --bead {id} --text \"<how to go on>\""),
        ),
        Rest::AwaitingHuman { step, .. } => Next::run(
            format!("{step} has no command: a person does it, then proposes the result"),
            format!("splice transition propose --bead {id} --step {step} --artifact <path>"),
        ),
        Rest::WaitingChildren { children } => Next::say(format!(
            "waits for its children to close: {}",
            some_of(children)
        )),
        // Rule 11: the check is recorded, and a run decides on it as it is.
        Rest::Escalated { reason } if node.escalated_check == Some(reason.as_str()) => Next::run(
            format!(
                "cannot go on: {reason}; a run leaves a check that could not check as it is: \
                 once that is fixed, check it again"
            ),
            format!(
                "splice transition complete --bead {id} --step {}",
                node.step
            ),
        ),
        // Found afresh by every decision (an undeclared step, no target, a cycle, a file that
        // cannot be read): gone once its cause is.
        Rest::Escalated { reason } => Next::run(
            format!("cannot go on: {reason}; once that is fixed, the next run checks it again"),
            "splice run",
        ),
        Rest::Backoff { until, attempt } => Next::say(format!(
            "waits before attempt {attempt} of its step: a run dispatches it at {until}"
        )),
        Rest::AwaitingMerge { pr_url } => Next::run(
            format!(
                "waits for its pull request to be merged{}; the next run checks the delivery",
                pr_url.as_ref().map_or(String::new(), |u| format!(" ({u})"))
            ),
            "splice run",
        ),
        Rest::Serialized { behind } => Next::say(format!(
            "waits for its sibling {behind}, which declares overlapping files"
        )),
        Rest::Queued => {
            Next::say("waits for a free job slot (`splice run --jobs N` runs more at once)")
        }
        Rest::Held { by } => Next::run(
            format!("its action waits: the run ended {}", by.as_str()),
            "splice run",
        ),
        Rest::Closed => Next::say("closed"),
    }
}

/// A pending gate: the file to read, and how to approve or send it back.
fn gate(node: &Node, step: &str, autonomy: &str) -> Next {
    let id = node.id;
    let read = node
        .review
        .as_ref()
        .map_or(String::new(), |r| format!("review {r}, then "));
    Next::run(
        format!(
            "waits for a person at the {step} gate ({autonomy}): {read}approve it, or send it \
             back with `splice transition reject --bead {id} --step {step} --reason \"…\"`"
        ),
        format!("splice transition approve --bead {id} --step {step}"),
    )
}

/// A claim by another holder: wait while it lives (`alive`: as the caller found), clear it when
/// it is gone (a run with `--reclaim-dead` releases it when the decision found its runner dead).
fn running(
    node: &Node,
    holder: &str,
    since: &str,
    died: Option<&Died>,
    alive: Option<bool>,
) -> Next {
    let id = node.id;
    let clear = format!("splice transition release --bead {id} --clear --reason \"<why>\"");
    let key = node.clear_key.map_or(String::new(), |k| format!(" ({k})"));
    if let Some(d) = died {
        return Next::run(
            format!(
                "claimed since {since} by {holder}, a runner that is no longer running ({}); \
                 `splice run --reclaim-dead` releases its claim and runs the node, or clear the \
                 claim{key}",
                d.text()
            ),
            clear.replace("<why>", "its runner died"),
        );
    }
    match alive {
        Some(true) => Next::say(format!(
            "a runner on this machine is working on it since {since} ({holder}); wait for it"
        )),
        Some(false) => Next::run(
            format!(
                "claimed since {since} by {holder}, a runner that is no longer running; clear \
                 the claim{key} so a new run can go on"
            ),
            clear.replace("<why>", "its runner died"),
        ),
        None => Next::run(
            format!(
                "claimed by {holder} since {since}; wait for it, or if that holder is gone, \
                 clear the claim"
            ),
            clear,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::{Node, for_rest, headline, some_of};
    use crate::model::snapshot::{DeathCause, Died};
    use crate::model::{Rest, RunStatus};

    fn running(holder: &str, died: Option<Died>) -> Rest {
        Rest::Running {
            holder: holder.into(),
            since: "t".into(),
            options: vec![],
            died,
        }
    }

    #[test]
    fn the_headline_names_a_dead_runner_and_never_says_it_works() {
        let dead = running(
            "run:h:41:r",
            Some(Died {
                pid: 41,
                cause: DeathCause::Gone,
            }),
        );
        let live = running("alice", None);
        let alive = |h: &str| (h == "alice").then_some(true);
        let one = headline(RunStatus::SuspendedRunning, [("sp-a", &dead)], alive);
        assert_eq!(
            one,
            "the runner that claimed sp-a has died (pid 41 gone); `splice run --reclaim-dead` \
             or `splice transition release --bead sp-a --clear --reason \"its runner died\"` \
             releases its claim"
        );
        let both = headline(
            RunStatus::SuspendedRunning,
            [("sp-a", &dead), ("sp-b", &live)],
            alive,
        );
        assert!(
            both.ends_with("; another holder has claimed sp-b"),
            "{both}"
        );
        assert!(!both.contains("another runner is at work"), "{both}");
        let only_live = headline(RunStatus::SuspendedRunning, [("sp-b", &live)], alive);
        assert_eq!(only_live, super::status_line(RunStatus::SuspendedRunning));
        // Not proven dead, but its pid is gone: said so, without `--reclaim-dead`.
        let gone = headline(RunStatus::SuspendedRunning, [("sp-b", &live)], |_| {
            Some(false)
        });
        assert!(gone.starts_with("the runner that claimed sp-b is no longer running here"));
        assert!(!gone.contains("--reclaim-dead"), "{gone}");
        let other = headline(RunStatus::Escalated, [("sp-a", &dead)], alive);
        assert_eq!(other, super::status_line(RunStatus::Escalated));
    }

    #[test]
    fn an_escalated_check_names_the_verb_that_checks_it_again() {
        let rest = Rest::Escalated {
            reason: "the suite cannot run".into(),
        };
        let node = |check| Node {
            id: "sp-a",
            step: "integrate",
            review: None,
            max_attempts: None,
            escalated_check: check,
            absent: Vec::new(),
            clear_key: None,
        };
        let checked = for_rest(&node(Some("the suite cannot run")), &rest, |_| None);
        assert_eq!(
            checked.command.as_deref(),
            Some("splice transition complete --bead sp-a --step integrate")
        );
        assert!(!checked.text.contains("next run"), "{}", checked.text);
        // An escalation decide finds afresh (another reason than the check's) is the run's.
        for other in [None, Some("an older reason")] {
            let decided = for_rest(&node(other), &rest, |_| None);
            assert_eq!(decided.command.as_deref(), Some("splice run"));
        }
    }

    #[test]
    fn a_long_list_of_ids_is_counted_past_the_first_three() {
        let ids = |n: usize| (1..=n).map(|i| format!("sp-x.{i}")).collect::<Vec<_>>();
        assert_eq!(some_of(&ids(2)), "sp-x.1, sp-x.2");
        assert_eq!(some_of(&ids(3)), "sp-x.1, sp-x.2, sp-x.3");
        assert_eq!(some_of(&ids(200)), "sp-x.1, sp-x.2, sp-x.3 and 197 more");
    }
}
