//! The executor's and the writer's readers of outside text: argv and prompt templates, a
//! split's children file, and an agent's usage (its stream-json log and its usage file).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use splice::exec::prompt::{MAX_PROMPT, PromptVars, RetryContext, render};
use splice::exec::template::{ArgvVars, command_argv, names, substitute};
use splice::exec::usage;
use splice::floors::is_relative_inside;
use splice::model::config::Price;
use splice::model::{CostSource, Usage};
use splice::transition::split::read_children;

use super::{Format, Target, files_in, no_seeds, parts, repo_root, scratch, utf8};

thread_local! {
    static FILES: tempfile::TempDir = scratch();
}

const ARGV_NAMES: &[&str] = &[
    "bead",
    "step",
    "attempt",
    "worktree",
    "holder",
    "run",
    "prompt",
    "prompt_file",
    "model",
];

/// `template`: an argv template renders exactly when every `{{name}}` in it is closed and known
/// (and the prompt ones have a prompt); a rendered argv has no `{{` left, one argument per
/// template line plus the prompt when the template does not name it, and `{{prompt_file}}`'s
/// file holds the prompt. Input: the template's arguments one per line, then NUL and the
/// prompt.
pub const TEMPLATE: Target = Target {
    name: "template",
    run: template,
    corpus: "template",
    cases: 40_000,
    format: Format::Text,
    dict: &[
        "{{bead}}",
        "{{ step }}",
        "{{attempt}}",
        "{{prompt}}",
        "{{prompt_file}}",
        "{{nope}}",
        "{{",
        "}}",
        "{",
        "\0",
    ],
    seeds: no_seeds,
};

fn template(data: &[u8]) -> bool {
    let p = parts(data);
    let argv: Vec<String> = p[0].split('\n').map(String::from).collect();
    let prompt = p.get(1).map(String::as_str);
    FILES.with(|dir| {
        let file = dir.path().join("runs/r1/prompt.md");
        let _ = std::fs::remove_file(&file);
        let vars = ArgvVars {
            bead: "sp-1",
            step: "implement",
            attempt: 2,
            worktree: Path::new("/w/sp-1"),
            holder: "h",
            run: "r1",
            model: Some("m"),
        };
        let got = command_argv(&argv, &vars, prompt, &file);
        let named: Option<Vec<String>> = argv
            .iter()
            .map(|a| names(a, "t").ok())
            .collect::<Option<Vec<_>>>()
            .map(|n| n.concat());
        let renders = named.as_ref().is_some_and(|n| {
            n.iter().all(|name| {
                ARGV_NAMES.contains(&name.as_str())
                    && (prompt.is_some() || !name.starts_with("prompt"))
            })
        });
        assert_eq!(got.is_ok(), renders, "{got:?}");
        // Substituting each name by itself, braced, is a fixed point after one round (when
        // no name holds a brace).
        for a in argv
            .iter()
            .filter(|a| names(a, "t").is_ok_and(|n| n.iter().all(|n| !n.contains(['{', '}']))))
        {
            let brace = |n: &str| Some(Cow::Owned(format!("{{{{{n}}}}}")));
            if let Ok(once) = substitute(a, "t", brace) {
                assert_eq!(substitute(&once, "t", brace).ok(), Some(once.clone()));
            }
        }
        let Ok(out) = got else { return false };
        let named = named.unwrap_or_default();
        let names_prompt = named.iter().any(|n| n.starts_with("prompt"));
        let extra = usize::from(prompt.is_some() && !names_prompt);
        assert_eq!(out.len(), argv.len() + extra);
        if !prompt.is_some_and(|t| t.contains('{')) {
            assert!(out.iter().all(|a| !a.contains("{{")), "{out:?}");
        }
        if named.iter().any(|n| n == "prompt_file") {
            let written = std::fs::read_to_string(&file).expect("the prompt file");
            assert_eq!(Some(written.as_str()), prompt);
        }
        true
    })
}

const PROMPT_NAMES: &[&str] = &[
    "bead.id",
    "bead.title",
    "bead.description",
    "root.id",
    "intent",
    "memory",
    "scenarios",
    "files",
    "parent.summary",
    "retry",
    "step",
    "artifact",
    "target",
];

fn prompt_seeds() -> Vec<(String, Vec<u8>)> {
    files_in(&repo_root().join("manifest/prompts"), |n| {
        n.ends_with(".md")
    })
}

/// `prompt`: a prompt template renders exactly when its names are known, within the prompt
/// cap, on a first attempt and on a retry. Input: the template, then NUL-separated title,
/// description, guidance, refusal reason, scenario ids (comma-separated) and files (lines).
pub const PROMPT: Target = Target {
    name: "prompt",
    run: prompt,
    corpus: "prompt",
    cases: 60_000,
    format: Format::Text,
    dict: &[
        "{{bead.title}}",
        "{{retry}}",
        "{{files}}",
        "{{bead.owner}}",
        "é",
        "\0",
        "{{",
    ],
    seeds: prompt_seeds,
};

fn prompt(data: &[u8]) -> bool {
    let p = parts(data);
    let part = |i: usize, default: &str| p.get(i).cloned().unwrap_or_else(|| default.into());
    let list = |i: usize, sep: char| -> Vec<String> {
        p.get(i)
            .map(|s| s.split(sep).map(String::from).collect())
            .unwrap_or_default()
    };
    let retry = RetryContext {
        reason: Some(part(4, "tests fail")),
        evidence: Some("{\"failed\":[\"s1\"]}".into()),
        guidance: Some(part(3, "handle overflow")),
        last_exit: Some("failed with code 2".into()),
        // A first attempt carrying guidance only, or a retry.
        first: data.get(1).is_some_and(|b| b & 1 == 1),
    };
    let mut vars = PromptVars {
        bead_id: "sp-1.2".into(),
        bead_title: part(1, "Add two"),
        bead_description: part(2, &"é".repeat(2000)),
        root_id: "sp-1".into(),
        scenarios: list(5, ','),
        defines_scenarios: data.first().is_some_and(|b| b & 1 == 1),
        files: list(6, '\n'),
        parent: Some((part(1, "Calculator"), part(2, "A CLI calc."))),
        retry: None,
        step: "implement".into(),
        artifact: "specs/sp-1.2.md".into(),
        target: "campaign/x".into(),
        responses: vec![("implement".into(), part(3, "fixed it"))],
        intent: part(4, "Add two numbers."),
        memory: part(5, &"m".repeat(3000)),
    };
    let template = &p[0];
    // `step.<name>.response` names any step: one without a response renders as such.
    let is_response = |n: &str| {
        n.strip_prefix("step.")
            .is_some_and(|r| r.ends_with(".response"))
    };
    let known = names(template, "t").is_ok_and(|n| {
        n.iter()
            .all(|name| PROMPT_NAMES.contains(&name.as_str()) || is_response(name))
    });
    let first = render(template, &vars);
    vars.retry = Some(retry);
    let again = render(template, &vars);
    assert_eq!(first.is_ok(), known, "{first:?}");
    assert_eq!(again.is_ok(), known);
    for out in [first, again].into_iter().flatten() {
        assert!(out.len() <= MAX_PROMPT, "{} bytes", out.len());
    }
    known
}

fn children_seeds() -> Vec<(String, Vec<u8>)> {
    let campaign = repo_root().join("state/campaign.json");
    let Ok(bytes) = std::fs::read(&campaign) else {
        return Vec::new();
    };
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        return Vec::new();
    };
    let children = value.get("children").cloned().unwrap_or(Value::Null);
    vec![(
        format!("{}#children", campaign.display()),
        serde_json::to_vec_pretty(&children).expect("serializes"),
    )]
}

/// `children`: a split's children file is refused unless it is a non-empty JSON array whose
/// children have titles, depend only on earlier children and declare relative files.
pub const CHILDREN: Target = Target {
    name: "children",
    run: children,
    corpus: "children",
    cases: 12_000,
    format: Format::Json,
    dict: &[
        "\"depends_on\": [0]",
        "\"files\": [\"../x\"]",
        "\"title\": \" \"",
    ],
    seeds: children_seeds,
};

fn children(data: &[u8]) -> bool {
    FILES.with(|dir| {
        let path = dir.path().join("children.json");
        std::fs::write(&path, data).expect("write");
        let Ok(children) = read_children(&path) else {
            return false;
        };
        assert!(
            serde_json::from_slice::<Vec<Value>>(data).is_ok(),
            "children read from something that is not a JSON array"
        );
        assert!(!children.is_empty());
        for (i, c) in children.iter().enumerate() {
            assert!(!c.title.trim().is_empty(), "child {i} has no title");
            assert!(
                c.depends_on.iter().all(|d| *d < i),
                "child {i} waits on a later one"
            );
            assert!(
                c.files.iter().all(|f| is_relative_inside(f)),
                "{:?}",
                c.files
            );
        }
        true
    })
}

/// `usage`: a stream-json log gives usage exactly when one of its lines is a JSON `result`
/// event; a usage file that is not a usage record is an error naming it, never zero usage; the
/// cost's source says whether there is a cost; pricing never invents a cost without a price.
pub const USAGE: Target = Target {
    name: "usage",
    run: usage_target,
    corpus: "usage",
    cases: 20_000,
    format: Format::JsonLines,
    dict: &[
        "{\"type\":\"result\"}",
        "{\"type\":\"system\",\"subtype\":\"init\",\"model\":\"m\"}",
        "\"total_cost_usd\": 1e308",
        "\"modelUsage\": {\"a\": {\"outputTokens\": 3}}",
        "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":9}}",
        "\"reasoning_output_tokens\": 18446744073709551615",
        "{\"stats\":{\"models\":{\"g\":{\"tokens\":{\"thoughts\":3}}}}}",
        "\n",
    ],
    seeds: no_seeds,
};

fn usage_target(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let from_log = usage::from_stream_json(&text);
    let has_result = text.lines().any(|l| {
        let l = l.trim();
        l.starts_with('{')
            && serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v.get("type").and_then(Value::as_str) == Some("result"))
    });
    assert_eq!(from_log.is_some(), has_result, "{from_log:?}");
    // Codex's and Gemini's reports carry no cost; their reasoning is a part of their output.
    for u in [usage::codex::usage(&text), usage::gemini::usage(&text)]
        .iter()
        .flatten()
    {
        assert_eq!((u.cost_usd, u.cost_source), (None, CostSource::Unknown));
        assert!(u.reasoning_tokens <= u.output_tokens, "{u:?}");
    }
    FILES.with(|dir| {
        let path = dir.path().join("usage.json");
        std::fs::write(&path, data).expect("write");
        let from_file = usage::from_file(&path);
        let record = utf8(data).and_then(|t| serde_json::from_str::<Usage>(t).ok());
        match &from_file {
            Ok(Some(_)) => assert!(record.is_some(), "read a usage file that is not one"),
            Ok(None) => panic!("an existing usage file read as none"),
            Err(_) => assert!(record.is_none(), "refused a usage record"),
        }
        let prices = BTreeMap::from([(
            "m".to_string(),
            Price {
                input: 3.0,
                output: 15.0,
                cache_read: 0.3,
                cache_write: 3.75,
                reasoning: Some(10.0),
            },
        )]);
        for u in from_log.iter().chain(from_file.iter().flatten()) {
            assert_eq!(
                u.cost_source == CostSource::Provider,
                u.cost_usd.is_some(),
                "{u:?}"
            );
            let mut priced = u.clone();
            usage::price(&mut priced, &prices);
            let has_price = u.model.as_deref().is_some_and(|m| m.starts_with('m'));
            if u.cost_usd.is_none() && !has_price {
                assert_eq!(priced.cost_usd, None, "a cost without a price");
                assert_eq!(priced.cost_source, CostSource::Unknown);
            }
        }
        from_log.is_some() || from_file.is_ok()
    })
}
