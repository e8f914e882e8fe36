//! Shared by `tests/loop_runtime.rs` and `tests/loop_effects.rs`: a repository whose leaf route
//! is one loop step, `work`, and scripted `sh` agents that act on `SPLICE_ITERATION`.
#![allow(dead_code)]

use serde_json::{Value, json};

use crate::common::Repo;

/// The manifest: the leaf route is one loop step `work` running `run` (an argv or a prompt),
/// with a tests stage reading the libtest lines the agent left in `results`; `looping` adds to
/// or replaces the loop spec's fields (`max_iterations` 5 unless given).
pub fn manifest(r: &Repo, run: Value, looping: Value) {
    let mut spec = json!({
        "max_iterations": 5,
        "stages": [ { "kind": "tests", "argv": ["cat", "results"] } ]
    });
    if let (Some(s), Some(extra)) = (spec.as_object_mut(), looping.as_object()) {
        for (k, v) in extra {
            s.insert(k.clone(), v.clone());
        }
    }
    let manifest = json!({
        "routes": { "root": ["plan", "delegate"], "compound": ["plan", "delegate"], "leaf": ["work"] },
        "steps": [
            { "name": "plan", "role": "split", "floors": [] },
            { "name": "delegate", "floors": [ { "kind": "children_finished" } ] },
            { "name": "work", "run": run, "floors": [], "timeout_s": 60, "loop": spec }
        ]
    });
    r.write(
        ".splice/manifest.json",
        &serde_json::to_string_pretty(&manifest).unwrap(),
    );
}

/// An argv loop step running `body` under [`lib`].
pub fn argv_step(r: &Repo, body: &str, looping: Value) {
    manifest(r, json!({ "argv": ["sh", "-c", script(r, body)] }), looping);
}

/// `body` with the helpers of [`lib`] loaded first.
pub fn script(r: &Repo, body: &str) -> String {
    lib(r);
    format!(". {}/lib.sh; {body}", r.path().display())
}

/// Shell helpers for scripted agents, in `<repo>/lib.sh` (the main checkout: the agent runs in
/// the node's worktree and reaches it by its absolute path, `$D`):
/// - `n`: the iteration (`SPLICE_ITERATION`);
/// - `results a=ok b=FAILED`: the libtest lines the tests stage reads;
/// - `commit`: commit everything (nothing to commit is fine);
/// - `note WORDS`: append a line to `$D/seen`;
/// - `keep_ctx`: copy the loop context (`SPLICE_LOOP_CONTEXT`) to `$D/ctx-<n>.json`.
pub fn lib(r: &Repo) {
    let dir = r.path().display();
    r.write(
        "lib.sh",
        &format!(
            "D={dir}\n\
             n=${{SPLICE_ITERATION:-0}}\n\
             results() {{ : > results; for t in \"$@\"; do echo \"test ${{t%%=*}} ... ${{t#*=}}\" >> results; done; }}\n\
             commit() {{ git add -A >/dev/null; git -c user.name=a -c user.email=a@x commit -qm \"iteration $n\" >/dev/null 2>&1 || true; }}\n\
             note() {{ echo \"$*\" >> $D/seen; }}\n\
             keep_ctx() {{ if [ -n \"${{SPLICE_LOOP_CONTEXT:-}}\" ]; then cp \"$SPLICE_LOOP_CONTEXT\" $D/ctx-$n.json; fi; }}\n"
        ),
    );
}

/// `.splice/config.toml`.
pub fn config(r: &Repo, toml: &str) {
    r.write(".splice/config.toml", toml);
}

/// A TOML array of strings.
pub fn toml_argv(argv: &[&str]) -> String {
    serde_json::to_string(argv).unwrap()
}

/// `splice run --output json ARGS`: the final envelope.
pub fn run(r: &Repo, args: &[&str]) -> Value {
    let mut all = vec!["run", "--output", "json"];
    all.extend_from_slice(args);
    r.ok(&all)
}

/// The node's iterations.
pub fn trajectory(b: &Value) -> Vec<Value> {
    b["pipeline"]["trajectory"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Each iteration's score (`None` for a stage failure).
pub fn scores(b: &Value) -> Vec<Option<i64>> {
    trajectory(b).iter().map(|i| i["score"].as_i64()).collect()
}

/// Each iteration's monitor decision.
pub fn decisions(b: &Value) -> Vec<String> {
    trajectory(b)
        .iter()
        .map(|i| i["monitor"]["decision"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The lines the agent noted (`note`).
pub fn seen(r: &Repo) -> Vec<String> {
    std::fs::read_to_string(r.path().join("seen"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The loop context the agent kept at iteration `n` (`keep_ctx`).
pub fn ctx(r: &Repo, n: u32) -> Value {
    let path = r.path().join(format!("ctx-{n}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (seen: {:?})", path.display(), seen(r)));
    serde_json::from_str(&text).unwrap()
}

/// The node's snapshot refs, `refs/splice/snapshots/<id>/<n>`, by n.
pub fn snapshot_refs(r: &Repo, id: &str) -> Vec<u32> {
    let out = r.git(&[
        "for-each-ref",
        "--format=%(refname)",
        &format!("refs/splice/snapshots/{id}/"),
    ]);
    let mut ns: Vec<u32> = out
        .lines()
        .filter_map(|l| l.rsplit('/').next()?.parse().ok())
        .collect();
    ns.sort_unstable();
    ns
}

/// A failed run's outputs, for assertion messages.
pub fn dump(r: &Repo, id: &str) -> String {
    let b = r.bead(id);
    format!(
        "status {}; dead_letter {}; trajectory {:#}\nseen {:?}",
        b["status"],
        b["pipeline"]["dead_letter"],
        json!(trajectory(&b)
            .iter()
            .map(|i| json!({"score": i["score"], "monitor": i["monitor"]["decision"], "effect": i["effect"], "ctx": i["context"]}))
            .collect::<Vec<_>>()),
        seen(r)
    )
}
