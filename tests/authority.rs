//! Issue 9, defect 11: the environment can only narrow a caller's authority, never widen it. Real
//! dispatches of `splice run` try to steer the runner from inside: a person's verbs with the
//! dispatch marker unset or set to 0 (also from a double-forked, `setsid` process), a sibling
//! dispatch's bead, the runner's verbs (`claim`, `park`, `release`, `record-run`), and verbs
//! without the dispatch's credential. Every attempt is refused and changes nothing; the agent's
//! own verbs on its own bead still work, even with `SPLICE_HOLDER` and `SPLICE_DISPATCHED` unset.
//!
//! These are the checks a run falls back on where the kernel sandbox is unavailable (issue 31):
//! the run here has `[sandbox] enabled = false`. The sandboxed run is `tests/sandbox_hostile.rs`.

mod common;

use std::time::{Duration, Instant};

use common::Repo;
use serde_json::Value;

/// A manifest whose leaf does `work` (an argv script) and then waits at a human gate (a step
/// without a command rests for a person).
fn manifest(r: &Repo, script: &str) {
    let manifest = serde_json::json!({
        "routes": { "root": ["plan", "delegate"], "compound": ["plan", "delegate"],
                    "leaf": ["work", "gated"] },
        "steps": [
            { "name": "plan", "floors": [] },
            { "name": "delegate", "floors": [ { "kind": "children_finished" } ] },
            { "name": "work", "run": { "argv": ["sh", "-c", script] }, "floors": [],
              "timeout_s": 120, "max_attempts": 1, "resume": "continue" },
            { "name": "gated", "floors": [], "gate": "human" }
        ]
    });
    r.write(
        ".splice/manifest.json",
        &serde_json::to_string_pretty(&manifest).unwrap(),
    );
}

/// What the attacking agent runs, each line `name exit-code` in `results`: `$1` is the bead at
/// a pending gate, `$2` a parked bead, `$3` the sibling dispatched beside it.
const ATTACKS: &str = r#"
gate=$1; parked=$2; sibling=$3; dir=$4
try() { name=$1; shift; "$@" >/dev/null 2>"$dir/$name.err"; echo "$name $?" >> "$dir/results"; }
i=0
until splice transition show --bead "$sibling" | grep -q '"lease": {'; do
  i=$((i+1)); [ $i -gt 600 ] && exit 9; sleep 0.05
done
try approve-unset env -u SPLICE_DISPATCHED splice transition approve --bead "$gate" --step gated
try approve-zero env SPLICE_DISPATCHED=0 splice transition approve --bead "$gate" --step gated
try unpark-unset env -u SPLICE_DISPATCHED splice transition unpark --bead "$parked" --reason go
try set-autonomy-bare env -u SPLICE_DISPATCHED -u SPLICE_CREDENTIAL -u SPLICE_HOLDER -u SPLICE_RUN \
  splice transition set-autonomy --bead "$SPLICE_BEAD" --level deep
# A double fork: the subshell exits at once, so its child is an orphan in a session of its own.
(env -u SPLICE_DISPATCHED -u SPLICE_CREDENTIAL -u SPLICE_HOLDER setsid sh -c '
  sleep 0.3
  splice transition approve --bead "$1" --step gated >/dev/null 2>"$2/approve-escaped.err"
  echo "approve-escaped $?" >> "$2/escaped"' escaped "$gate" "$dir" &)
i=0
until [ -s "$dir/escaped" ]; do i=$((i+1)); [ $i -gt 600 ] && exit 9; sleep 0.05; done
cat "$dir/escaped" >> "$dir/results"
try propose-sibling splice transition propose --bead "$sibling" --step work --artifact stolen
try release-sibling splice transition release --bead "$sibling" --holder "$SPLICE_HOLDER"
try claim-other splice transition claim --bead "$gate" --holder "$SPLICE_HOLDER"
try park-other splice transition park --bead "$gate" --reason forged
echo '{"status": "forged"}' > "$dir/envelope.json"
try record-run splice transition record-run --bead "$SPLICE_BEAD" --envelope "$dir/envelope.json"
try release-own splice transition release --bead "$SPLICE_BEAD" --holder "$SPLICE_HOLDER"
try propose-no-credential env -u SPLICE_CREDENTIAL \
  splice transition propose --bead "$SPLICE_BEAD" --step work --artifact HEAD
try show-no-credential env -u SPLICE_CREDENTIAL splice transition show --bead "$SPLICE_BEAD"
try propose-own env -u SPLICE_DISPATCHED -u SPLICE_HOLDER \
  splice transition propose --bead "$SPLICE_BEAD" --step work --artifact HEAD
touch "$dir/done"
"#;

/// What the sibling's agent runs: wait for the attacker, then propose its own work.
const SIBLING: &str = r#"
dir=$4; i=0
until [ -e "$dir/done" ]; do i=$((i+1)); [ $i -gt 1200 ] && exit 9; sleep 0.05; done
splice transition propose --bead "$SPLICE_BEAD" --step work --artifact HEAD
"#;

/// Why each attempt was refused, as its stderr says.
const REASONS: &[(&str, &str)] = &[
    ("approve-unset", "`approve` is a person's verb"),
    ("approve-zero", "`approve` is a person's verb"),
    ("unpark-unset", "`unpark` is a person's verb"),
    ("set-autonomy-bare", "`set-autonomy` is a person's verb"),
    ("approve-escaped", "`approve` is a person's verb"),
    ("propose-sibling", "credential does not hold its claim"),
    (
        "release-sibling",
        "`release` is the runner's or a person's verb",
    ),
    ("claim-other", "`claim` is the runner's or a person's verb"),
    ("park-other", "`park` is the runner's or a person's verb"),
    (
        "record-run",
        "`record-run` is the runner's or a person's verb",
    ),
    (
        "release-own",
        "`release` is the runner's or a person's verb",
    ),
    ("propose-no-credential", "has no credential"),
];

fn results(dir: &std::path::Path) -> Vec<(String, i32)> {
    std::fs::read_to_string(dir.join("results"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (name, code) = l.split_once(' ')?;
            Some((name.to_string(), code.parse().ok()?))
        })
        .collect()
}

#[test]
fn an_agent_cannot_widen_its_authority_through_the_environment() {
    let r = Repo::new();
    let dir = r.path().join("attack");
    std::fs::create_dir_all(&dir).unwrap();
    manifest(&r, "true");
    r.write(".splice/config.toml", "[sandbox]\nenabled = false\n");
    let attacker = r.task("Attacker", &[]);
    let sibling = r.task("Sibling", &[]);
    let gate = r.task("Awaiting a person", &[]);
    let parked = r.task("Parked", &[]);
    // A gate pending at `gated`, and a parked node: neither is dispatched.
    r.ok(&[
        "transition",
        "route",
        "--bead",
        &gate,
        "--to",
        "leaf",
        "--at",
        "gated",
    ]);
    r.ok(&[
        "transition",
        "propose",
        "--bead",
        &gate,
        "--step",
        "gated",
        "--artifact",
        "x",
    ]);
    let out = r.ok(&["transition", "complete", "--bead", &gate, "--step", "gated"]);
    assert_eq!(out["gate"], "pending");
    r.ok(&[
        "transition",
        "park",
        "--bead",
        &parked,
        "--reason",
        "a person parked it",
    ]);
    let script =
        format!("if [ \"$SPLICE_BEAD\" = {attacker} ]; then {ATTACKS}\nelse {SIBLING}\nfi",);
    manifest(&r, &script);
    // The script's arguments: the argv template appends the bead ids and the directory.
    let manifest_text = std::fs::read_to_string(r.state().join("manifest.json")).unwrap();
    let mut m: Value = serde_json::from_str(&manifest_text).unwrap();
    let argv = m["steps"][2]["run"]["argv"].as_array_mut().unwrap();
    for arg in [
        "attack",
        &gate,
        &parked,
        &sibling,
        &dir.display().to_string(),
    ] {
        argv.push(Value::String(arg.to_string()));
    }
    r.write(
        ".splice/manifest.json",
        &serde_json::to_string_pretty(&m).unwrap(),
    );
    let before_gate = r.bead(&gate);
    let before_parked = r.bead(&parked);

    let started = Instant::now();
    let env = r.ok(&["run", "--output", "json", "--jobs", "2"]);
    assert!(started.elapsed() < Duration::from_secs(120));

    let got = results(&dir);
    let err =
        |name: &str| std::fs::read_to_string(dir.join(format!("{name}.err"))).unwrap_or_default();
    let stderr: String = got
        .iter()
        .map(|(n, _)| format!("{n}: {}", err(n)))
        .collect();
    let expect = [
        ("approve-unset", 1),
        ("approve-zero", 1),
        ("unpark-unset", 1),
        ("set-autonomy-bare", 1),
        ("approve-escaped", 1),
        ("propose-sibling", 1),
        ("release-sibling", 1),
        ("claim-other", 1),
        ("park-other", 1),
        ("record-run", 1),
        ("release-own", 1),
        ("propose-no-credential", 1),
        ("show-no-credential", 0),
        ("propose-own", 0),
    ];
    let expect: Vec<(String, i32)> = expect.iter().map(|(n, c)| (n.to_string(), *c)).collect();
    assert_eq!(
        got, expect,
        "stderr of the attempts:\n{stderr}\nrun: {env:#}"
    );

    // Nothing the refused attempts named changed.
    assert_eq!(r.bead(&gate), before_gate, "the gated bead is untouched");
    assert_eq!(
        r.bead(&parked),
        before_parked,
        "the parked bead is untouched"
    );
    assert!(r.bead(&attacker)["pipeline"]["autonomy"].is_null());
    let journal = r.journal();
    assert!(
        !journal.contains("stolen") && !journal.contains("forged"),
        "{journal}"
    );
    // The agents' own work went through: each proposed on its own bead, which moved on.
    for id in [&attacker, &sibling] {
        let b = r.bead(id);
        assert_eq!(b["pipeline"]["step"], "gated", "{id}: {b:#}");
        assert!(
            b["pipeline"]["lease"].is_null(),
            "{id}: the runner released"
        );
    }
    // Each was refused for the reason the authority rule gives, not by some other check.
    for (name, reason) in REASONS {
        assert!(err(name).contains(reason), "{name}: {}", err(name));
    }
}
