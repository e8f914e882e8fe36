//! A reader that goes away (`splice … | head`, a closed pipe) must not turn a write that
//! committed into a crash: the verb exits as it ran, and nothing panics (issue 9, defect 7).
//! Every read command exits 0 with its stdout closed, or read one line and closed, and nothing
//! writes to stdout around `src/stdio.rs` (issue 38).

mod common;

use std::process::{Output, Stdio};

use common::Repo;

/// Run `args` with stdout connected to a pipe whose reading end is closed before splice writes.
fn with_stdout_closed(r: &Repo, args: &[&str]) -> Output {
    let mut child = r
        .cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_committed_write_exits_as_it_ran_when_stdout_is_closed() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let out = with_stdout_closed(
        &r,
        &[
            "transition",
            "set-autonomy",
            "--bead",
            &id,
            "--autonomy",
            "wave",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(r.bead(&id)["pipeline"]["autonomy"], "wave");
    // A refusal still says why and exits 1.
    let out = with_stdout_closed(
        &r,
        &["transition", "unpark", "--bead", &id, "--reason", "r"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is not parked") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn a_full_disk_behind_stdout_fails_the_command_after_its_write_stands() {
    // `/dev/full` refuses every write with ENOSPC, as a full disk behind `> file` does.
    let r = Repo::new();
    let id = r.task("T", &[]);
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let out = r
        .cmd(&[
            "transition",
            "set-autonomy",
            "--bead",
            &id,
            "--autonomy",
            "wave",
        ])
        .stdout(full())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("splice: stdout:") && err.contains("the output is incomplete"),
        "{err}"
    );
    assert_eq!(
        r.bead(&id)["pipeline"]["autonomy"],
        "wave",
        "the write stands"
    );
    for args in [
        vec!["show", id.as_str()],
        vec!["list", "--json"],
        vec!["status"],
    ] {
        let out = r.cmd(&args).stdout(full()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn a_pass_and_a_run_exit_as_they_ran_when_stdout_is_closed() {
    let r = Repo::new();
    r.task("T", &[]);
    // An agent that can be found: a run looks its commands up before anything else.
    r.write(".splice/config.toml", "[agent]\ncommand = [\"true\"]\n");
    for args in [
        &["pass", "--output", "json"][..],
        &["run", "--output", "human", "--max-passes", "1"][..],
        &["run", "--output", "stream-json", "--max-passes", "1"][..],
    ] {
        let out = with_stdout_closed(&r, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // The passes were recorded on the task although nobody read them.
    assert!(r.journal().contains("\"record-run\""));
}

/// What a run with a closed stdout must never say on stderr: it exited as it ran.
fn assert_quiet_exit_0(what: &str, out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "`splice {what}`: {err}");
    for bad in ["panicked", "Broken pipe", "broken pipe"] {
        assert!(!err.contains(bad), "`splice {what}` says {bad:?}: {err}");
    }
}

/// A campaign with a task, a dispatch log, a snapshot file for `decide` and a trajectory file
/// for `monitor`: every read command has something to print.
fn small_store() -> (Repo, String) {
    let r = Repo::new();
    r.init(&[]);
    let id = r.task("T", &[]);
    // One dispatch (an agent that proposes nothing), so `logs` has a log to print.
    r.write(".splice/config.toml", "[agent]\ncommand = [\"true\"]\n");
    r.ok(&["pass", "--output", "json"]);
    let snap = r.run(&["snapshot"]);
    assert_eq!(snap.status.code(), Some(0));
    std::fs::write(r.path().join("snap.json"), &snap.stdout).unwrap();
    let trajectory = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("snapshots/monitor/ask-user-confidence-falls.json");
    std::fs::copy(trajectory, r.path().join("trajectory.json")).unwrap();
    (r, id)
}

/// Every read-only command a person types (the `read-only` class of the verb table,
/// `src/transition/authority.rs`, and the reads outside it: `status`, `snapshot`, `decide`),
/// with their `--json` forms where they have one. Left out: `guard` and `hooks pre-commit`
/// (hooks, which read their input from Claude Code or git), `sandbox exec` (its stdout is the
/// command it runs), `drive` (refuses without a terminal) and `design show` (needs a session,
/// which needs a design agent).
fn read_commands(id: &str) -> Vec<Vec<String>> {
    let cases: &[&str] = &[
        "status",
        "status --json",
        "snapshot",
        "snapshot --pretty",
        "decide --snapshot snap.json",
        "list",
        "list --all --json",
        "ready",
        "ready --json",
        "show ID",
        "show ID --json",
        "show ID --field step",
        "show ID --field autonomy --json",
        "logs ID",
        "logs --json",
        "monitor --trajectory trajectory.json",
        "manifest show",
        "doctor",
        "doctor --json",
        "export bd",
        "pass --dry-run",
        "transition show --bead ID",
        "transition step --bead ID",
        "transition kind --bead ID",
        "transition autonomy --bead ID",
        "transition target --bead ID",
        "transition delivery --bead ID",
        "hooks status",
        "hooks status --json",
        "classify fix-a-typo-in-the-readme",
        "design list --json",
        "completions bash",
        "man",
        "label list ID",
        "dep tree ID",
        "cache rebuild",
    ];
    cases
        .iter()
        .map(|c| c.split(' ').map(|w| w.replace("ID", id)).collect())
        .collect()
}

#[test]
fn every_read_command_exits_0_when_stdout_is_closed() {
    let (r, id) = small_store();
    let mut failures = Vec::new();
    for args in read_commands(&id) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let what = args.join(" ");
        // With a reader, it prints something: so the closed pipe below is written to.
        let open = r.run(&args);
        if open.status.code() != Some(0) || open.stdout.is_empty() {
            failures.push(format!(
                "`splice {what}` with a reader: exit {:?}, {} bytes out: {}",
                open.status.code(),
                open.stdout.len(),
                String::from_utf8_lossy(&open.stderr)
            ));
            continue;
        }
        let closed = with_stdout_closed(&r, &args);
        let err = String::from_utf8_lossy(&closed.stderr);
        let said = ["panicked", "Broken pipe", "broken pipe"]
            .iter()
            .find(|bad| err.contains(*bad));
        if closed.status.code() != Some(0) || said.is_some() {
            failures.push(format!(
                "`splice {what}` with stdout closed: exit {:?}: {err}",
                closed.status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Run `args` with stdout read up to its first line, then closed (`splice … | head -1`); what
/// the whole output would have been is returned beside, to check that it outgrew the pipe.
fn first_line_then_closed(r: &Repo, args: &[&str]) -> (String, Output) {
    use std::io::BufRead;
    let mut child = r
        .cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    (first, child.wait_with_output().unwrap())
}

/// An epic of 1,500 children started as a campaign: every read prints far more than a pipe
/// holds (64 KiB), so splice is still writing when the reader goes away.
fn big_store() -> Repo {
    let r = Repo::new();
    let mut text = String::from("{\"id\":\"bd-e\",\"title\":\"epic\"}\n");
    for i in 1..=1500 {
        text.push_str(&format!(
            "{{\"id\":\"bd-e.{i}\",\"title\":\"child number {i} of the epic\",\"parent\":\"bd-e\"}}\n"
        ));
    }
    r.write("issues.jsonl", &text);
    r.ok(&["import", "bd", "issues.jsonl", "--json"]);
    r.ok(&["start", "bd-e", "--campaign"]);
    let snap = r.run(&["snapshot"]);
    std::fs::write(r.path().join("snap.json"), &snap.stdout).unwrap();
    r
}

#[test]
fn a_reader_that_takes_one_line_of_a_big_output_and_goes_leaves_exit_0() {
    let r = big_store();
    // `snapshot` prints one line (its reader takes it all, then goes); the others are still
    // writing when their reader goes.
    for what in [
        "status",
        "status --json",
        "snapshot",
        "snapshot --pretty",
        "decide --snapshot snap.json",
        "list",
        "list --all --json",
        "export bd",
        "pass --dry-run",
    ] {
        let args: Vec<&str> = what.split(' ').collect();
        let whole = r.run(&args);
        assert_eq!(whole.status.code(), Some(0), "`splice {what}`: {whole:?}");
        assert!(
            whole.stdout.len() > 1 << 16,
            "`splice {what}` prints {} bytes: not more than a pipe holds",
            whole.stdout.len()
        );
        let (first, out) = first_line_then_closed(&r, &args);
        assert!(!first.is_empty(), "`splice {what}`: no first line");
        assert_quiet_exit_0(what, &out);
    }
}

/// Nothing but `src/stdio.rs` writes to stdout: the closed-pipe rule is kept there, once, so no
/// command can print around it. (The cockpit draws on the terminal through ratatui, and a
/// check whether stdout is a terminal writes nothing.) `eprintln!` is out too: it panics when
/// stderr is closed.
#[test]
fn only_stdio_writes_to_stdout() {
    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut found = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let is_test = rel.ends_with("tests.rs") || rel.contains("/tests/");
        if rel == "stdio.rs" || rel.starts_with("drive/") || is_test {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // A file's unit tests (`#[cfg(test)] mod tests`, last by convention) may print.
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        for (n, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap();
            let prints = ["println!", "print!(", "eprintln!", "eprint!("]
                .iter()
                .any(|m| line.contains(m));
            let raw = line.contains("io::stdout()") && !line.contains("io::stdout().is_terminal()");
            if prints || raw {
                found.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "stdout written around src/stdio.rs:\n{}",
        found.join("\n")
    );
}
