//! Issue 35, items 3 and 4: the request's bounded intent (`{{intent}}`: `[plan] distiller`'s,
//! else seed 000's deterministic cut) and the project memory bundle (`{{memory}}`, only in the
//! code writer's and the test generator's prompts, fail-soft), through `splice exec` with the
//! simulated agent behind a wrapper that keeps each step's prompt.

mod common;

use std::path::{Path, PathBuf};

use common::Repo;

/// A scratch repository on `dev` (which no approval protects) whose agent keeps the prompt of
/// each step in `prompts/<step>.txt` outside the repository, then does the simulated agent's
/// work. Unsandboxed: the notes are kept outside the worktree.
fn repo(extra_config: &str) -> (Repo, tempfile::TempDir) {
    let r = Repo::unconfined();
    r.git(&["checkout", "-q", "-b", "dev"]);
    let kept = tempfile::tempdir().unwrap();
    let script = format!(
        "printf '%s' \"$1\" > {}/$SPLICE_STEP.txt; exec {} sim-agent --generic \"$1\"",
        kept.path().display(),
        env!("CARGO_BIN_EXE_splice")
    );
    r.write(
        ".splice/config.toml",
        &format!(
            "[agent]\ncommand = [\"sh\", \"-c\", {}, \"agent\"]\n{extra_config}",
            toml_string(&script)
        ),
    );
    (r, kept)
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn prompt(kept: &Path, step: &str) -> String {
    let file: PathBuf = kept.join(format!("{step}.txt"));
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

#[must_use]
fn exec(r: &Repo, request: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "exec",
        request,
        "--autonomy",
        "wave",
        "--delivery",
        "direct",
    ];
    args.extend_from_slice(extra);
    let out = r.run(&args);
    common::no_panic(&out);
    out
}

/// `splice exec REQUEST --json`, required to exit 0: the task's id and stderr.
fn exec_done(r: &Repo, request: &str) -> (String, String) {
    let out = exec(r, request, &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = envelope["id"].as_str().unwrap().to_string();
    (id, text(&out.stderr))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_failing_memory_read_shows_in_progress_and_the_run_still_reaches_done() {
    let (r, kept) = repo("");
    r.write(
        ".splice/memory/conventions.md",
        "Greetings end with an exclamation mark (MEMO-42).\n",
    );
    // A memory file that cannot be read: not UTF-8. And one that is a link (never followed).
    std::fs::write(r.state().join("memory/broken.md"), [0xff, 0xfe, 0x00]).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", r.state().join("memory/linked.md")).unwrap();
    let out = exec(&r, "Add a greeting\nSay hello to every user.", &[]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {}",
        text(&out.stderr)
    );
    // The failures are in the run's progress, named, and did not stop it.
    let warned: Vec<&str> = stdout.lines().filter(|l| l.contains("warning:")).collect();
    assert!(
        warned
            .iter()
            .any(|l| l.contains("memory") && l.contains("broken.md") && l.contains("implement")),
        "{stdout}"
    );
    assert!(warned.iter().any(|l| l.contains("linked.md")), "{stdout}");
    assert!(stdout.contains("done"), "{stdout}");
    let id = std::fs::read_dir(r.state().join("beads"))
        .unwrap()
        .flatten()
        .find_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".json")
                .map(str::to_string)
        })
        .expect("the task's bead");
    assert_eq!(r.bead(&id)["status"], "closed", "the run reached done");
    // The code writer got the bundle: the readable file and the facts splice knows.
    let implement = prompt(kept.path(), "implement");
    assert!(implement.contains("MEMO-42"), "{implement}");
    assert!(implement.contains("## conventions.md"), "{implement}");
    assert!(implement.contains("- test command:"), "{implement}");
    assert!(!implement.contains("broken.md"), "{implement}");
    // No other step queries it.
    let review = prompt(kept.path(), "review");
    assert!(!review.contains("MEMO-42"), "{review}");
    assert!(!review.contains("Project memory"), "{review}");
}

#[test]
fn without_a_distiller_the_steps_get_the_deterministic_cut_and_the_bead_keeps_the_request() {
    let (r, kept) = repo("");
    let tail = "THE-TAIL-OF-THE-REQUEST";
    let request = format!(
        "Add a greeting\n\n{}\n{tail}",
        "Say   hello to every user, politely. ".repeat(12)
    );
    let (id, _) = exec_done(&r, &request);
    let bead = r.bead(&id);
    assert_eq!(
        bead["description"],
        request.trim(),
        "the request stays whole"
    );
    assert!(
        bead["pipeline"].get("intent").is_none(),
        "nothing distilled"
    );
    let implement = prompt(kept.path(), "implement");
    let line = implement
        .lines()
        .find(|l| l.starts_with("The request, distilled: "))
        .unwrap_or_else(|| panic!("{implement}"));
    let intent = line.trim_start_matches("The request, distilled: ");
    assert!(
        intent.starts_with("Add a greeting Say hello to every user"),
        "{intent}"
    );
    assert!(intent.ends_with("..."), "{intent}");
    assert_eq!(intent.chars().count(), 320, "{intent}");
    assert!(!intent.contains(tail), "{intent}");
}

#[test]
fn a_configured_distiller_gives_the_steps_its_intent_and_a_failing_one_is_warned_of() {
    // The distiller reads the request file named last, and prints the intent.
    let (r, kept) = repo(
        "[plan]\ndistiller = [\"sh\", \"-c\", \"grep -q 'Say hello' \\\"$1\\\" && \
         test \\\"$1\\\" = \\\"$SPLICE_REQUEST\\\" && printf '  Greet each user by name.\\n'\", \
         \"distiller\"]\n",
    );
    let (id, _) = exec_done(&r, "Add a greeting\nSay hello to every user.");
    let bead = r.bead(&id);
    assert_eq!(
        bead["pipeline"]["intent"]["text"],
        "Greet each user by name."
    );
    assert_eq!(bead["pipeline"]["intent"]["by"], "sh");
    assert_eq!(
        bead["description"],
        "Add a greeting\nSay hello to every user."
    );
    for step in ["implement", "review"] {
        let p = prompt(kept.path(), step);
        assert!(
            p.contains("The request, distilled: Greet each user by name.\n"),
            "{step}: {p}"
        );
    }
    assert!(
        r.journal().contains("Greet each user by name."),
        "the intent is journaled with the new node"
    );

    // A distiller that fails is not the request's failure: warned of, and the cut is used.
    r.write(
        ".splice/config.toml",
        &std::fs::read_to_string(r.state().join("config.toml"))
            .unwrap()
            .replace("grep -q", "exit 3; grep -q"),
    );
    let (id, stderr) = exec_done(&r, "Add a farewell\nSay goodbye to every user.");
    assert!(
        stderr.contains("warning") && stderr.contains("[plan] distiller") && stderr.contains("cut"),
        "{stderr}"
    );
    assert!(r.bead(&id)["pipeline"].get("intent").is_none());
    let p = prompt(kept.path(), "implement");
    assert!(
        p.contains("The request, distilled: Add a farewell Say goodbye to every user.\n"),
        "{p}"
    );
}
