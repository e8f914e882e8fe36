//! Step prompts: a template (`manifest/prompts/*.md`) rendered with a bounded context.
//!
//! Variables (an unknown one is an error naming it):
//!
//! | variable | value | cap |
//! |---|---|---|
//! | `{{bead.id}}` | the node's id | — |
//! | `{{bead.title}}` | its title | 300 bytes |
//! | `{{bead.description}}` | its description | 3000 bytes |
//! | `{{root.id}}` | the campaign root's id (the node itself when it has no parent) | — |
//! | `{{scenarios}}` | owned scenario ids, comma-separated; when there are none, `none`, or on the spec step what to do: define them, each with its own id (S1, S2, …), recorded on the node when the spec passes | 600 bytes |
//! | `{{files}}` | declared file scope, one per line as `- path` (`none` when empty) | 1200 bytes |
//! | `{{parent.summary}}` | the parent's title and the start of its description (empty without a parent) | 800 bytes |
//! | `{{retry}}` | on a retry: how the last attempt ended, the last refusal's reason and evidence (since the node entered the step) and the revision guidance; on a first attempt the guidance alone, when a branch (`goto`, `call`) or a call's return left some, else empty | 2500 bytes |
//! | `{{step}}` | the step name | — |
//! | `{{artifact}}` | the path the step is expected to produce (empty when none) | — |
//! | `{{target}}` | the branch the node's work lands on (its delivery target) | — |
//! | `{{intent}}` | the request's intent (`model::intent`): its root's distilled intent (`[plan] distiller`), else seed 000's deterministic cut of the root's request (whitespace collapsed, at most 320 characters) | 1200 bytes |
//! | `{{memory}}` | the project memory bundle (`driver::memory`): `.splice/memory/*.md` and the facts splice knows (test command, languages, past root causes); read only for a prompt that names it | 2000 bytes |
//! | `{{step.<name>.response}}` | the response recorded for step `<name>` of this node (its latest dispatch's, e.g. the code writer's summary for a test generator), or `(no response recorded for <name>)` | 1500 bytes |
//!
//! Each field is truncated at a character boundary with a marker, and the whole prompt is held
//! to [`MAX_PROMPT`] bytes. Logs never go into a prompt: only reasons, evidence and guidance.

use std::borrow::Cow;

use serde_json::Value;

use crate::error::Result;
use crate::model::Bead;
use crate::model::bead::{ExitKind, ExitRecord, Verdict};

use super::template::substitute;

/// The most a rendered prompt may hold, in bytes.
pub const MAX_PROMPT: usize = 12 * 1024;

const TITLE_CAP: usize = 300;
const DESCRIPTION_CAP: usize = 3000;
const SCENARIOS_CAP: usize = 600;
const FILES_CAP: usize = 1200;
const PARENT_CAP: usize = 800;
const RETRY_CAP: usize = 2500;
const REASON_CAP: usize = 800;
const EVIDENCE_CAP: usize = 800;
const GUIDANCE_CAP: usize = 1500;
const RESPONSE_CAP: usize = 1500;
/// `{{memory}}`'s cap (the bundle holds itself to it: `driver::memory::MEMORY_CAP`).
pub const MEMORY_CAP: usize = 2000;

/// Why the last attempt did not pass: what a retry's prompt is told.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RetryContext {
    /// The last refusal's reason (a floor's or a person's).
    pub reason: Option<String>,
    /// The last refusal's evidence, as compact JSON.
    pub evidence: Option<String>,
    /// `pipeline.guidance`: a review's text or a person's rejection.
    pub guidance: Option<String>,
    /// How the last dispatch on the step ended, when it ended without passing
    /// (e.g. `timeout`, `failed with code 2, no proposal`).
    pub last_exit: Option<String>,
    /// A first attempt that carries guidance only (a branch's `goto` or `call`, or a call's
    /// return, to a step not tried before): the text says no earlier attempt failed.
    pub first: bool,
}

/// The context a step prompt is rendered with.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PromptVars {
    pub bead_id: String,
    pub bead_title: String,
    pub bead_description: String,
    pub root_id: String,
    pub scenarios: Vec<String>,
    /// The step defines the node's scenarios when it owns none (the spec step): `{{scenarios}}`
    /// then says so instead of `none`.
    pub defines_scenarios: bool,
    pub files: Vec<String>,
    /// The parent's title and description.
    pub parent: Option<(String, String)>,
    /// `None` on a first attempt.
    pub retry: Option<RetryContext>,
    pub step: String,
    pub artifact: String,
    /// The branch the node's work lands on.
    pub target: String,
    /// Each step's recorded response (`pipeline.responses`), for `{{step.<name>.response}}`.
    pub responses: Vec<(String, String)>,
    /// The request's intent (`model::intent::of` its root).
    pub intent: String,
    /// The project memory bundle, for a prompt that names `{{memory}}`.
    pub memory: String,
}

impl PromptVars {
    /// The context for dispatching `attempt` of the node's current step. `root_id` is the
    /// campaign root (the node's own id for a lone task); `artifact` what the step produces.
    pub fn for_dispatch(
        bead: &Bead,
        parent: Option<&Bead>,
        root_id: &str,
        attempt: u32,
        artifact: &str,
    ) -> PromptVars {
        let p = &bead.pipeline;
        let guided = p.guidance.as_deref().filter(|g| !g.trim().is_empty());
        let first = guided.filter(|_| attempt <= 1).map(|g| RetryContext {
            guidance: Some(g.to_string()),
            first: true,
            ..RetryContext::default()
        });
        let retry = (attempt > 1).then(|| {
            let refusal = bead
                .check_since_entry()
                .filter(|c| c.verdict == Verdict::Refuse);
            RetryContext {
                reason: refusal.map(|c| c.reason.clone()),
                evidence: refusal
                    .filter(|c| !c.evidence.is_null())
                    .map(|c| compact(&c.evidence)),
                guidance: p.guidance.as_deref().map(str::to_string),
                last_exit: bead.exit_since_entry().and_then(describe_exit),
                first: false,
            }
        });
        let retry = retry.or(first);
        PromptVars {
            bead_id: bead.id.to_string(),
            bead_title: bead.title.to_string(),
            bead_description: bead.description.clone(),
            root_id: root_id.to_string(),
            scenarios: p.scenarios.to_vec(),
            defines_scenarios: false,
            files: p.files.iter().map(|f| f.to_string()).collect(),
            parent: parent.map(|b| (b.title.to_string(), b.description.clone())),
            retry,
            step: p.step.to_string(),
            artifact: artifact.to_string(),
            target: String::new(),
            responses: p
                .responses
                .iter()
                .map(|(step, r)| (step.clone(), r.text.clone()))
                .collect(),
            intent: String::new(),
            memory: String::new(),
        }
    }
}

/// A dispatch exit worth telling the next attempt about: anything but a clean exit that proposed.
fn describe_exit(e: &ExitRecord) -> Option<String> {
    let how = match (e.exit, e.code) {
        (ExitKind::Ok, _) => "exited 0".to_string(),
        (ExitKind::Failed, Some(code)) => format!("failed with code {code}"),
        (ExitKind::Failed, None) => "failed".to_string(),
        (ExitKind::Timeout, _) => "ran past the step's timeout and was killed".to_string(),
        (ExitKind::Error, _) => "could not run to completion (it died by a signal)".to_string(),
        (ExitKind::NotStarted, _) => "could not start its command".to_string(),
        (ExitKind::Cancelled, _) => "was stopped by the runner (Ctrl-C or SIGTERM)".to_string(),
        (ExitKind::Transient, _) => "met a transient failure of its API".to_string(),
        (ExitKind::Unauthorized, _) => "could not authenticate to its API".to_string(),
        (ExitKind::Stalled, _) => "made no progress for a while and was stopped".to_string(),
    };
    match (e.exit, e.proposed) {
        (ExitKind::Ok, true) => None,
        (_, true) => Some(how),
        (_, false) => Some(format!("{how}, without proposing its work")),
    }
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Cut `text` to at most `cap` bytes at a character boundary, saying how much was cut.
pub fn truncate(text: &str, cap: usize) -> Cow<'_, str> {
    if text.len() <= cap {
        return Cow::Borrowed(text);
    }
    let marker_room = 40.min(cap);
    let mut end = cap - marker_room;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text.len() - end;
    Cow::Owned(format!("{}… [{cut} bytes cut]", &text[..end]))
}

fn list_or_none(items: &[String], render: impl Fn(&str) -> String, sep: &str) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items
            .iter()
            .map(|s| render(s))
            .collect::<Vec<_>>()
            .join(sep)
    }
}

fn retry_text(retry: &RetryContext) -> String {
    if retry.first {
        return retry.guidance.as_ref().map_or_else(String::new, |g| {
            format!("Guidance for this step:\n{}\n", truncate(g, GUIDANCE_CAP))
        });
    }
    let mut out = String::from("This is a retry. The last attempt did not pass.\n");
    if let Some(exit) = &retry.last_exit {
        out.push_str(&format!("The last attempt {exit}.\n"));
    }
    if let Some(reason) = &retry.reason {
        out.push_str(&format!(
            "Refused because: {}\n",
            truncate(reason, REASON_CAP)
        ));
    }
    if let Some(evidence) = &retry.evidence {
        out.push_str(&format!("Evidence: {}\n", truncate(evidence, EVIDENCE_CAP)));
    }
    if let Some(guidance) = &retry.guidance {
        out.push_str(&format!(
            "Revision guidance:\n{}\n",
            truncate(guidance, GUIDANCE_CAP)
        ));
    }
    out
}

/// `{{scenarios}}` of a spec step for a node that owns none.
pub const DEFINE_SCENARIOS: &str = "none yet. This task owns no scenario, so your spec defines \
    them: write each as a Gherkin `Scenario: S1 <what it shows>` line with its own id (S1, S2, \
    …); splice records the ids on the task when the spec passes";

/// Render a step prompt template.
pub fn render(template: &str, vars: &PromptVars) -> Result<String> {
    let scenarios = match vars.scenarios.is_empty() && vars.defines_scenarios {
        true => DEFINE_SCENARIOS.to_string(),
        false => list_or_none(&vars.scenarios, str::to_string, ", "),
    };
    let files = list_or_none(&vars.files, |f| format!("- {f}"), "\n");
    let parent = vars
        .parent
        .as_ref()
        .map(|(title, description)| {
            if description.trim().is_empty() {
                title.clone()
            } else {
                format!("{title}: {description}")
            }
        })
        .unwrap_or_default();
    let retry = vars.retry.as_ref().map(retry_text).unwrap_or_default();
    let out = substitute(template, "prompt template", |name| {
        Some(match name {
            "bead.id" => Cow::Borrowed(vars.bead_id.as_str()),
            "bead.title" => truncate(&vars.bead_title, TITLE_CAP),
            "bead.description" => truncate(&vars.bead_description, DESCRIPTION_CAP),
            "root.id" => Cow::Borrowed(vars.root_id.as_str()),
            "scenarios" => Cow::Owned(truncate(&scenarios, SCENARIOS_CAP).into_owned()),
            "files" => Cow::Owned(truncate(&files, FILES_CAP).into_owned()),
            "parent.summary" => Cow::Owned(truncate(&parent, PARENT_CAP).into_owned()),
            "retry" => Cow::Owned(truncate(&retry, RETRY_CAP).into_owned()),
            "step" => Cow::Borrowed(vars.step.as_str()),
            "artifact" => Cow::Borrowed(vars.artifact.as_str()),
            "target" => Cow::Borrowed(vars.target.as_str()),
            "intent" => truncate(&vars.intent, crate::model::intent::DISTILLED_CAP),
            "memory" => truncate(&vars.memory, MEMORY_CAP),
            _ => {
                let step = name.strip_prefix("step.")?.strip_suffix(".response")?;
                match vars.responses.iter().find(|(s, _)| s == step) {
                    Some((_, text)) if !text.trim().is_empty() => {
                        Cow::Owned(truncate(text.trim(), RESPONSE_CAP).into_owned())
                    }
                    _ => Cow::Owned(format!("(no response recorded for {step})")),
                }
            }
        })
    })?;
    Ok(truncate(&out, MAX_PROMPT).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::bead::Check;

    fn bead() -> Bead {
        let mut b = Bead::new(
            "sp-1.2".into(),
            "Add two".into(),
            "Sum numbers.".into(),
            "t",
        );
        b.pipeline.step = "implement".into();
        b.pipeline.scenarios = vec!["S1".into(), "S2".into()].into();
        b.pipeline.files = vec!["src/add.rs".into()];
        b
    }

    const T: &str = "# {{step}} {{bead.id}} ({{root.id}})\n{{bead.title}}\n{{bead.description}}\n\
        Scenarios: {{scenarios}}\nFiles:\n{{files}}\nParent: {{parent.summary}}\n{{retry}}Write {{artifact}}.";

    #[test]
    fn first_attempt_has_no_retry_text() {
        let parent = Bead::new(
            "sp-1".into(),
            "Calculator".into(),
            "A CLI calc.".into(),
            "t",
        );
        let vars = PromptVars::for_dispatch(&bead(), Some(&parent), "sp-1", 1, "specs/sp-1.2.md");
        let out = render(T, &vars).unwrap();
        assert_eq!(
            out,
            "# implement sp-1.2 (sp-1)\nAdd two\nSum numbers.\nScenarios: S1, S2\nFiles:\n\
             - src/add.rs\nParent: Calculator: A CLI calc.\nWrite specs/sp-1.2.md."
        );
    }

    #[test]
    fn a_steps_response_reaches_a_later_steps_prompt_bounded_or_says_there_is_none() {
        use crate::model::bead::StepResponse;
        let mut b = bead();
        b.pipeline.step = "generate-tests".into();
        let said = |text: &str| StepResponse {
            text: text.into(),
            confidence: None,
        };
        b.pipeline.responses.insert(
            "implement".into(),
            said("  parse() now rejects empty input\n"),
        );
        let t = "Summary: {{ step.implement.response }}\nSpec: {{step.generate-spec.response}}";
        let out = render(t, &PromptVars::for_dispatch(&b, None, "sp-1", 1, "")).unwrap();
        assert_eq!(
            out,
            "Summary: parse() now rejects empty input\nSpec: (no response recorded for generate-spec)"
        );
        b.pipeline
            .responses
            .insert("implement".into(), said(&"x".repeat(10_000)));
        let out = render(t, &PromptVars::for_dispatch(&b, None, "sp-1", 1, "")).unwrap();
        assert!(
            out.len() < 1700 && out.contains("bytes cut]"),
            "{}",
            out.len()
        );
        // Anything else under `step.` is still an unknown variable.
        assert!(render("{{step.implement.stdout}}", &PromptVars::default()).is_err());
    }

    #[test]
    fn retry_carries_refusal_and_guidance() {
        let mut b = bead();
        b.pipeline.last_check = Some(Box::new(Check {
            step: "implement".into(),
            seq: 4,
            verdict: Verdict::Refuse,
            reason: "tests fail".into(),
            evidence: serde_json::json!({"failed": ["s1_adds"]}),
            run: None,
            awaiting_merge: false,
            recheck: false,
            at: "t".into(),
        }));
        b.pipeline.guidance = Some("handle overflow".into());
        let out = render(
            "{{retry}}",
            &PromptVars::for_dispatch(&b, None, "sp-1.2", 2, ""),
        )
        .unwrap();
        assert!(out.contains("Refused because: tests fail"), "{out}");
        assert!(out.contains(r#"{"failed":["s1_adds"]}"#), "{out}");
        assert!(out.contains("handle overflow"), "{out}");

        // A refusal from an earlier entry of the step is stale; a timeout is told.
        b.pipeline.entered = 5;
        b.push_exit(ExitRecord {
            step: "implement".into(),
            attempt: 1,
            seq: 6,
            exit: ExitKind::Timeout,
            code: None,
            cause: None,
            proposed: false,
            log: None,
            usage: None,
            retry_after_s: None,
            at: "t".into(),
        });
        let vars = PromptVars::for_dispatch(&b, None, "sp-1.2", 2, "");
        let out = render("{{retry}}", &vars).unwrap();
        assert!(!out.contains("tests fail"), "{out}");
        assert!(
            out.contains("timeout and was killed, without proposing"),
            "{out}"
        );
    }

    #[test]
    fn a_first_attempt_with_guidance_carries_it_alone() {
        let mut b = bead();
        b.pipeline.guidance = Some("Route diagnostics returned: the parser drops a byte".into());
        let out = render(
            "{{retry}}",
            &PromptVars::for_dispatch(&b, None, "sp-1", 1, ""),
        )
        .unwrap();
        assert_eq!(
            out,
            "Guidance for this step:\nRoute diagnostics returned: the parser drops a byte\n"
        );
        b.pipeline.guidance = Some("  ".into());
        let out = render(
            "{{retry}}",
            &PromptVars::for_dispatch(&b, None, "sp-1", 1, ""),
        )
        .unwrap();
        assert_eq!(out, "", "blank guidance is none");
    }

    #[test]
    fn fields_and_whole_prompt_are_capped() {
        let mut b = bead();
        b.description = "é".repeat(10_000);
        b.pipeline.guidance = Some("g".repeat(100_000).into());
        let vars = PromptVars::for_dispatch(&b, None, "sp-1", 3, "");
        let out = render("{{bead.description}}", &vars).unwrap();
        assert!(out.len() <= DESCRIPTION_CAP && out.contains("bytes cut"));
        let big = "{{retry}}{{bead.description}}".repeat(10);
        let out = render(&big, &vars).unwrap();
        assert!(out.len() <= MAX_PROMPT, "{}", out.len());
    }

    #[test]
    fn a_spec_step_for_a_node_owning_no_scenario_says_to_define_them() {
        let mut b = bead();
        b.pipeline.scenarios.clear();
        let mut vars = PromptVars::for_dispatch(&b, None, "sp-1", 1, "");
        assert_eq!(render("{{scenarios}}", &vars).unwrap(), "none");
        vars.defines_scenarios = true;
        assert_eq!(render("{{scenarios}}", &vars).unwrap(), DEFINE_SCENARIOS);
        vars.scenarios = vec!["S1".into()];
        assert_eq!(render("{{scenarios}}", &vars).unwrap(), "S1");
    }

    #[test]
    fn unknown_variable_is_named() {
        let err = render("{{bead.owner}}", &PromptVars::default()).unwrap_err();
        assert!(err.to_string().contains("{{bead.owner}}"), "{err}");
    }
}
