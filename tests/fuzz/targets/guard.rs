//! The guard's reader of outside input: Claude Code's hook JSON and the Bash commands in it
//! (`splice guard`, issue 11).

use std::path::{Path, PathBuf};

use splice::guard::{Context, Decision, Dispatch, judge_bytes, parse_input};

use super::{Format, Target, files_in, repo_root, scratch};

thread_local! {
    static SANDBOX: (tempfile::TempDir, Context) = sandbox();
}

/// A state directory with a dispatch's worktree in it, and a dispatched session's context.
fn sandbox() -> (tempfile::TempDir, Context) {
    let dir = scratch();
    let root = dir.path().canonicalize().expect("the scratch dir resolves");
    let state = root.join(".splice");
    let own = state.join("worktrees/sp-own");
    for d in [
        state.join("beads"),
        own.join("src"),
        state.join("worktrees/sp-other"),
    ] {
        std::fs::create_dir_all(d).expect("the sandbox is made");
    }
    let ctx = Context {
        state: Some(state),
        repo: Some(root.clone()),
        home: Some(root.clone()),
        temp: vec![PathBuf::from("/tmp")],
        own_worktree: Some(own.clone()),
        env: Default::default(),
        dispatch: Some(Dispatch {
            bead: Some("sp-own".into()),
            branches: vec!["main".into()],
            ..Dispatch::default()
        }),
        cwd: own,
    };
    (dir, ctx)
}

/// `guard`: whatever the input, judging it never panics; input that is not hook JSON is a
/// fault (allowed), never a denial; a denial's reason is not empty; the same input is judged
/// the same way twice.
pub const GUARD: Target = Target {
    name: "guard",
    run: guard_target,
    corpus: "guard",
    cases: 20_000,
    format: Format::Json,
    dict: &[
        "$(",
        ")",
        "`",
        "<<EOF\n",
        "\nEOF\n",
        "'",
        "\"",
        "\\",
        ";",
        "&&",
        "|",
        ">",
        ">>",
        "2>&1",
        "rm -rf ",
        ".splice",
        "/beads/",
        "bash -c ",
        "eval ",
        "xargs ",
        "env -i ",
        "cd ..",
        "${X:-",
        "}",
        "~/",
        "git push -f ",
        "splice transition approve ",
        "--dir ",
        "sed -i ",
        "for f in *; do ",
        "; done",
        "case a in a) ",
        ";; esac",
        "\u{0131}",
        "find ../../.. ",
        " -name '",
        " -iname ",
        "[!a-",
        " -delete",
        " -exec rm -f {} +",
    ],
    seeds: guard_seeds,
};

/// The inputs of `tests/guard/*.jsonl`, the guard's own corpus.
fn guard_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, bytes) in files_in(&repo_root().join("tests/guard"), |n| n.ends_with(".jsonl")) {
        for (i, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
            if let Ok(case) = serde_json::from_str::<serde_json::Value>(line) {
                out.push((
                    format!("{name}:{i}"),
                    case["input"].to_string().into_bytes(),
                ));
            }
        }
    }
    out
}

fn guard_target(data: &[u8]) -> bool {
    SANDBOX.with(|(_, ctx)| {
        let context = |cwd: Option<&Path>| {
            let mut c = ctx.clone();
            if let Some(cwd) = cwd.filter(|c| c.is_absolute()) {
                c.cwd = cwd.to_path_buf();
            }
            c
        };
        let first = judge_bytes(data, context);
        let valid = parse_input(data).is_ok();
        if !valid {
            assert!(
                matches!(first, Decision::Fault(_)),
                "not hook JSON, judged {first:?}"
            );
        }
        if let Decision::Deny(reason) = &first {
            assert!(!reason.trim().is_empty(), "a denial without a reason");
        }
        assert_eq!(
            judge_bytes(data, context),
            first,
            "judged differently twice"
        );
        valid
    })
}
