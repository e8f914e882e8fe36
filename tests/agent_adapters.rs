//! Issue 15 §3: the usage adapters of Codex CLI (`codex exec --json`) and Gemini CLI
//! (`gemini -p … --output-format json`) beside Claude Code's, on transcripts recorded from the
//! tools' public formats (`tests/fixtures/agents/`): several turns, tool calls, a failed run.
//! A fake agent prints a transcript; splice reads its tokens, model, cost and final response,
//! whether `[agent] usage` names the adapter or it is detected from the log.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use common::Repo;
use splice::exec::dispatch::{DispatchSpec, dispatch};
use splice::exec::usage::{Adapter, CostSource, Usage};
use splice::model::bead::ExitKind;
use splice::model::config::Price;

#[path = "exec_common/mod.rs"]
mod exec_common;
use exec_common::{fixture, paths, sh, spec};

fn transcript(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/agents"
    ))
    .join(name)
}

fn prices() -> BTreeMap<String, Price> {
    let price = |input, output, cache_read| Price {
        input,
        output,
        cache_read,
        cache_write: 0.0,
        reasoning: None,
    };
    BTreeMap::from([
        ("gpt-5-codex".to_string(), price(1.25, 10.0, 0.125)),
        ("gemini-2.5-pro".to_string(), price(1.25, 10.0, 0.31)),
    ])
}

/// What a dispatch of an agent printing `name` (then exiting with `code`) records.
fn dispatch_printing(
    name: &str,
    code: i32,
    adapter: Adapter,
    model: Option<&str>,
) -> splice::exec::DispatchResult {
    let f = fixture();
    let p = paths(&f, 1);
    let script = format!("cat '{}'; exit {code}", transcript(name).display());
    let argv = sh(&script);
    let prices = prices();
    let spec = DispatchSpec {
        usage: adapter,
        prices: &prices,
        model,
        ..spec(&f, &p, &argv)
    };
    dispatch(&spec).unwrap()
}

fn tokens(u: &Usage) -> (u64, u64, u64, u64, u64) {
    (
        u.input_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
        u.output_tokens,
        u.reasoning_tokens,
    )
}

#[test]
fn codex_the_last_turns_totals_the_configured_model_and_the_last_message() {
    for adapter in [Adapter::CodexJson, Adapter::Auto] {
        let r = dispatch_printing("codex-turns.jsonl", 0, adapter, Some("gpt-5-codex"));
        let u = r.usage.expect("usage from turn.completed");
        // The second turn.completed holds the thread's totals (the first turn's included):
        // input less its cached part, output with its reasoning.
        assert_eq!(tokens(&u), (3_200, 48_000, 0, 900, 640), "{adapter:?}");
        assert_eq!(u.model.as_deref(), Some("gpt-5-codex"));
        assert_eq!(u.cost_source, CostSource::Prices);
        let cost = (3_200.0 * 1.25 + 900.0 * 10.0 + 48_000.0 * 0.125) / 1e6;
        assert!((u.cost_usd.unwrap() - cost).abs() < 1e-12, "{u:?}");
        assert_eq!(u.latency_ms, r.elapsed_ms, "Codex reports no duration");
        let said = r.response.expect("the last agent message").text;
        assert_eq!(said, "IMPLEMENTED: notes and tests committed, proposed.");
    }
    // Without a configured model, nothing names one: the cost is unknown, never 0.
    let u = dispatch_printing("codex-turns.jsonl", 0, Adapter::CodexJson, None)
        .usage
        .unwrap();
    assert_eq!((u.cost_usd, u.cost_source), (None, CostSource::Unknown));
}

#[test]
fn codex_cut_off_by_its_rate_limit_is_transient_with_no_usage_or_response() {
    for adapter in [Adapter::CodexJson, Adapter::Auto] {
        let r = dispatch_printing("codex-failed.jsonl", 1, adapter, Some("gpt-5-codex"));
        // A rate limit is the API's, not the agent's failure: no attempt is counted for it.
        assert_eq!(r.exit, ExitKind::Transient);
        assert!(r.usage.is_none(), "{:?}", r.usage);
        assert!(r.response.is_none(), "not the last event: {:?}", r.response);
        assert_eq!(
            r.cause.as_deref(),
            Some("the agent reported: stream disconnected before completion: rate limit reached")
        );
    }
}

#[test]
fn gemini_stats_summed_over_models_the_main_model_and_the_response() {
    for adapter in [Adapter::GeminiJson, Adapter::Auto] {
        let r = dispatch_printing("gemini-turns.json", 0, adapter, Some("gemini-2.5-flash"));
        let u = r.usage.expect("usage from stats");
        // prompt − cached + tool per model; output is candidates + thoughts.
        assert_eq!(
            tokens(&u),
            (
                40_210 - 30_150 + 24 + 8_965 + 28,
                30_150,
                0,
                812 + 955 + 10 + 30,
                955 + 30
            ),
            "{adapter:?}"
        );
        // The model with the most output, named by the output: the configured one is not used.
        assert_eq!(u.model.as_deref(), Some("gemini-2.5-pro"));
        assert_eq!(u.cost_source, CostSource::Prices);
        assert_eq!(u.latency_ms, r.elapsed_ms);
        let said = r.response.expect("the response").text;
        assert_eq!(
            said,
            "IMPLEMENTED: the notes and their feature file are committed."
        );
    }
}

#[test]
fn gemini_a_failed_run_has_no_usage_no_response_and_its_error_as_cause() {
    let r = dispatch_printing("gemini-failed.json", 1, Adapter::Auto, None);
    assert_eq!(r.exit, ExitKind::Failed);
    assert!(r.usage.is_none());
    assert!(r.response.is_none(), "not a brace: {:?}", r.response);
    let cause = r.cause.unwrap();
    assert!(cause.contains("exceeded your current quota"), "{cause}");
}

#[test]
fn an_adapter_reads_its_own_format_only() {
    let r = dispatch_printing("gemini-turns.json", 0, Adapter::CodexJson, None);
    assert!(r.usage.is_none());
    let r = dispatch_printing("codex-turns.jsonl", 0, Adapter::GeminiJson, None);
    assert!(r.usage.is_none());
    let r = dispatch_printing("codex-turns.jsonl", 0, Adapter::ClaudeStreamJson, None);
    assert!(r.usage.is_none());
}

/// The agent of `docs/agents.md` (it does the work and proposes), its own output sent to
/// stderr and its usage file removed, followed by a recorded transcript on stdout: splice as
/// configured with `usage`, a run to the spec's gate.
fn run_with_transcript(name: &str, usage: &str, model: &str) -> (Repo, String, tempfile::TempDir) {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/agents.md")).unwrap();
    let at = doc.find("<!-- agent.sh -->").unwrap();
    let body = &doc[at..];
    let body = &body[body.find("```sh\n").unwrap() + 6..];
    let agent = &body[..body.find("\n```").unwrap() + 1];
    let r = Repo::unconfined();
    r.git(&["branch", "dev"]);
    let bin_dir = tempfile::tempdir().unwrap();
    let bin = bin_dir.path();
    let script = bin.join("agent.sh");
    std::fs::write(&script, agent).unwrap();
    let wrapper = bin.join("fake-agent");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nshift 2\n'{}' \"$@\" >&2 || exit 1\nrm -f \"$SPLICE_USAGE_FILE\"\ncat '{}'\n",
            script.display(),
            transcript(name).display()
        ),
    )
    .unwrap();
    for f in [&script, &wrapper] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"{}\", \"--model\", \"{{{{model}}}}\"]\nmodel = \"{model}\"\n{usage}\n\
             [prices.\"gpt-5-codex\"]\ninput = 1.25\noutput = 10.0\ncache_read = 0.125\n\
             [prices.\"gemini-2.5-pro\"]\ninput = 1.25\noutput = 10.0\ncache_read = 0.31\n",
            wrapper.display()
        ),
    );
    let id = r.task("Write the notes", &["--target", "dev"]);
    let env = r.ok(&["run", "--json"]);
    assert_eq!(env["status"], "suspended-human", "{env:#}");
    (r, id, bin_dir)
}

#[test]
fn a_run_records_a_codex_dispatchs_usage_and_response_on_the_node() {
    for usage in ["usage = \"codex-json\"", ""] {
        let (r, id, _bin) = run_with_transcript("codex-turns.jsonl", usage, "gpt-5-codex");
        let b = r.bead(&id);
        let u = &b["pipeline"]["usage"];
        assert_eq!(u["input_tokens"], 3_200, "{usage}: {b:#}");
        assert_eq!(u["cache_read_tokens"], 48_000);
        assert_eq!(u["output_tokens"], 900);
        assert_eq!(u["reasoning_tokens"], 640);
        assert_eq!(u["model"], "gpt-5-codex");
        assert_eq!(u["cost_source"], "prices");
        assert_eq!(
            b["pipeline"]["responses"]["generate-spec"]["text"],
            "IMPLEMENTED: notes and tests committed, proposed."
        );
    }
}

#[test]
fn a_run_records_a_gemini_dispatchs_usage_on_the_node() {
    let (r, id, _bin) = run_with_transcript(
        "gemini-turns.json",
        "usage = \"gemini-json\"",
        "gemini-2.5-pro",
    );
    let b = r.bead(&id);
    let u = &b["pipeline"]["usage"];
    assert_eq!(u["output_tokens"], 1_807, "{b:#}");
    assert_eq!(u["reasoning_tokens"], 985);
    assert_eq!(u["model"], "gemini-2.5-pro");
    assert_eq!(u["cost_source"], "prices");
}
