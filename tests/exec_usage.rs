//! Dispatch usage and cost (stream-json result events, usage files, prices) and prompt delivery.

use std::collections::BTreeMap;
use std::fs;

use splice::exec::dispatch::{DispatchSpec, dispatch};
use splice::exec::template::{ArgvVars, command_argv};
use splice::exec::usage::{Adapter, CostSource};
use splice::model::bead::ExitKind;
use splice::model::config::Price;

#[path = "exec_common/mod.rs"]
mod exec_common;
use exec_common::{fixture, paths, sh, spec};

#[test]
fn usage_from_a_stream_json_result_event() {
    let f = fixture();
    let p = paths(&f, 1);
    let argv = sh(
        r#"echo '{"type":"system","subtype":"init","model":"claude-sonnet-4-5"}'
echo 'working' >&2
echo '{"type":"result","subtype":"success","duration_ms":777,"total_cost_usd":0.25,"usage":{"input_tokens":10,"output_tokens":20,"cache_read_input_tokens":30,"cache_creation_input_tokens":40}}'"#,
    );
    let r = dispatch(&spec(&f, &p, &argv)).unwrap();
    let u = r.usage.expect("usage from the result event");
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens
        ),
        (10, 20, 30, 40)
    );
    assert_eq!(u.latency_ms, 777);
    assert_eq!(
        (u.cost_usd, u.cost_source),
        (Some(0.25), CostSource::Provider)
    );
    assert_eq!(u.model.as_deref(), Some("claude-sonnet-4-5"));
}

fn prices() -> BTreeMap<String, Price> {
    let mut prices = BTreeMap::new();
    prices.insert(
        "m-priced".to_string(),
        Price {
            input: 2.0,
            output: 10.0,
            cache_read: 0.0,
            cache_write: 0.0,
            reasoning: None,
        },
    );
    prices
}

#[test]
fn usage_from_a_usage_file_priced_or_unknown() {
    let f = fixture();
    let prices = prices();
    let run = |model: &str, adapter: Adapter| {
        let p = paths(&f, 1);
        let script = format!(
            r#"printf '{{"input_tokens":1000000,"output_tokens":500000,"reasoning_tokens":7,"model":"{model}"}}' > "$SPLICE_USAGE_FILE""#
        );
        let argv = sh(&script);
        let spec = DispatchSpec {
            usage: adapter,
            prices: &prices,
            ..spec(&f, &p, &argv)
        };
        let r = dispatch(&spec).unwrap();
        if let Some(u) = &r.usage {
            // The file reports no latency: the dispatch's wall time stands in.
            assert_eq!(u.latency_ms, r.elapsed_ms);
        }
        r.usage
    };
    let u = run("m-priced", Adapter::Auto).expect("usage file read");
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.reasoning_tokens),
        (1_000_000, 500_000, 7)
    );
    assert_eq!(u.cost_source, CostSource::Prices);
    assert!((u.cost_usd.unwrap() - 7.0).abs() < 1e-9);

    let u = run("m-unpriced", Adapter::File).expect("usage file read");
    assert_eq!((u.cost_usd, u.cost_source), (None, CostSource::Unknown));
    let json = serde_json::to_value(&u).unwrap();
    assert!(json["cost_usd"].is_null());

    assert!(run("m-priced", Adapter::None).is_none());
}

#[test]
fn a_bad_usage_file_is_noted_not_fatal() {
    let f = fixture();
    let p = paths(&f, 1);
    let argv = sh(r#"echo 'not json' > "$SPLICE_USAGE_FILE""#);
    let r = dispatch(&spec(&f, &p, &argv)).unwrap();
    assert_eq!(r.exit, ExitKind::Ok);
    assert!(r.usage.is_none());
    let log = fs::read_to_string(&r.log).unwrap();
    assert!(log.contains("usage not recorded"), "{log}");
}

#[test]
fn a_rendered_prompt_reaches_the_agent() {
    let f = fixture();
    let p = paths(&f, 1);
    let vars = ArgvVars {
        bead: "sp-1",
        step: "implement",
        attempt: 1,
        worktree: &f.worktree,
        holder: "h",
        run: "run-1",
        model: None,
    };
    let template = sh("printf '%s|%s' \"$0\" \"$(cat {{prompt_file}})\" > got.out");
    let argv = command_argv(&template, &vars, Some("do the {{thing}}"), &p.prompt_file).unwrap();
    let r = dispatch(&spec(&f, &p, &argv)).unwrap();
    assert_eq!(r.exit, ExitKind::Ok);
    let got = fs::read_to_string(f.worktree.join("got.out")).unwrap();
    assert_eq!(got, "sh|do the {{thing}}");
}

/// The usage and result files are the agent's to write, so it may leave anything there: a FIFO
/// (opened for reading, it blocked the runner until a writer came, past the step's timeout and
/// SIGTERM) or a link to `/dev/zero` (read to the end, it ate memory until the host ran out).
/// Each is refused, naming it, and the dispatch ends with its exit recorded.
#[test]
fn a_fifo_or_a_link_to_dev_zero_as_the_agent_s_files_is_refused_not_read() {
    for script in [
        r#"mkfifo "$SPLICE_USAGE_FILE"; mkfifo "$SPLICE_RESULT_FILE""#,
        r#"ln -s /dev/zero "$SPLICE_USAGE_FILE"; ln -s /dev/zero "$SPLICE_RESULT_FILE""#,
    ] {
        let (tx, rx) = std::sync::mpsc::channel();
        // Not scoped: a dispatch that never ends fails the test instead of hanging it.
        std::thread::spawn(move || {
            let f = fixture();
            let p = paths(&f, 1);
            let argv = sh(script);
            let spec = DispatchSpec {
                usage: Adapter::File,
                ..spec(&f, &p, &argv)
            };
            let r = dispatch(&spec).expect("the dispatch ends");
            let log = fs::read_to_string(&p.log).unwrap();
            let _ = tx.send((r.usage.is_none(), r.response.is_none(), log));
        });
        let (no_usage, no_response, log) = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{script}: the dispatch did not end"));
        assert!(no_usage && no_response, "{script}: {log}");
        assert!(
            log.contains("usage not recorded") && log.contains("usage.json"),
            "{script}: {log}"
        );
    }
}
