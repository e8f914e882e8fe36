//! Nothing an agent leaves, or a committer commits, can hang or fool splice (issue 31, item 6;
//! `docs/security.md`, "Files splice reads"): a FIFO where a file is read, a link, a file far
//! larger than any real one, or a journal of NUL bytes is refused at once, naming the file,
//! exit 2 (a floor's evidence: the floor refuses, exit 1), and nothing is written.
//!
//! Every command here runs with a deadline and is killed past it: a FIFO that hangs splice
//! fails the test instead of hanging it.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::Repo;

/// Run `cmd` to its end, or kill it after `limit` and fail naming what hung.
#[must_use]
fn bounded(mut cmd: Command, limit: Duration, what: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("splice starts");
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?} (a file hung it)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run splice `args` in `r` with a 30 s deadline; require exit `code`; return stderr.
fn fails_within(r: &Repo, code: i32, args: &[&str]) -> String {
    let out = bounded(r.cmd(args), Duration::from_secs(30), &args.join(" "));
    common::no_panic(&out);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "splice {args:?}: {stderr}");
    stderr
}

fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success());
}

/// The state's bytes (bead files and journal), for "nothing written".
fn state(r: &Repo) -> (Vec<(String, Vec<u8>)>, String) {
    (r.beads_bytes(), r.journal())
}

#[test]
fn a_fifo_as_the_spec_file_is_refused_by_the_floor_at_once() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let spec = format!("specs/{id}.md");
    mkfifo(&r.path().join(&spec));
    let err = fails_within(
        &r,
        1,
        &[
            "transition",
            "complete",
            "--bead",
            &id,
            "--step",
            "generate-spec",
        ],
    );
    assert!(err.contains(&spec), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn a_link_on_the_path_of_evidence_is_refused_even_inside_the_worktree() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    r.write("docs/real.md", "anything");
    std::fs::create_dir_all(r.path().join("specs")).unwrap();
    std::os::unix::fs::symlink(
        r.path().join("docs/real.md"),
        r.path().join(format!("specs/{id}.md")),
    )
    .unwrap();
    let err = fails_within(
        &r,
        1,
        &[
            "transition",
            "complete",
            "--bead",
            &id,
            "--step",
            "generate-spec",
        ],
    );
    assert!(err.contains("symbolic link"), "{err}");
    // A link to a directory above it is refused the same way.
    std::fs::remove_file(r.path().join(format!("specs/{id}.md"))).unwrap();
    std::fs::remove_dir(r.path().join("specs")).unwrap();
    std::os::unix::fs::symlink(r.path().join("docs"), r.path().join("specs")).unwrap();
    std::fs::write(r.path().join(format!("docs/{id}.md")), "anything").unwrap();
    let err = fails_within(
        &r,
        1,
        &[
            "transition",
            "complete",
            "--bead",
            &id,
            "--step",
            "generate-spec",
        ],
    );
    assert!(err.contains("symbolic link"), "{err}");
}

#[test]
fn a_fifo_as_an_input_file_is_refused_naming_it_and_writes_nothing() {
    let r = Repo::new();
    let root = r.init(&[]);
    let fifo = r.path().join("in.fifo");
    mkfifo(&fifo);
    let before = state(&r);
    for args in [
        vec![
            "transition",
            "split",
            "--bead",
            &root,
            "--children",
            "in.fifo",
        ],
        vec!["transition", "resplit", &root, "--children", "in.fifo"],
        vec!["import", "bd", "in.fifo"],
        vec!["plan", "approve", "in.fifo"],
        vec!["decide", "--snapshot", "in.fifo"],
    ] {
        let err = fails_within(&r, 2, &args);
        assert!(err.contains("in.fifo"), "{args:?}: {err}");
        assert!(err.contains("not a regular file"), "{args:?}: {err}");
        assert_eq!(state(&r), before, "{args:?} wrote nothing");
    }
}

#[test]
fn a_link_as_an_input_file_is_refused() {
    let r = Repo::new();
    let root = r.init(&[]);
    std::os::unix::fs::symlink("/dev/zero", r.path().join("zero.json")).unwrap();
    let err = fails_within(
        &r,
        2,
        &[
            "transition",
            "split",
            "--bead",
            &root,
            "--children",
            "zero.json",
        ],
    );
    assert!(
        err.contains("zero.json") && err.contains("symbolic link"),
        "{err}"
    );
}

#[test]
fn a_config_or_manifest_over_one_mib_is_refused_naming_it() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let config = r.state().join("config.toml");
    let original = std::fs::read(&config).unwrap_or_default();
    // A comment: valid TOML of any size, so only the size refuses it. Sparse past 1 MiB.
    let mut big = original.clone();
    big.extend_from_slice(b"\n# ");
    std::fs::write(&config, &big).unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&config)
        .unwrap();
    f.set_len(1 << 30).unwrap();
    drop(f);
    for args in [
        vec!["status"],
        vec!["transition", "park", "--bead", &id, "--reason", "r"],
    ] {
        let err = fails_within(&r, 2, &args);
        assert!(err.contains("config.toml"), "{args:?}: {err}");
        assert!(err.contains("larger than 1 MiB"), "{args:?}: {err}");
    }
    std::fs::write(&config, &original).unwrap();
    let manifest = r.state().join("manifest.json");
    std::fs::write(&manifest, vec![b' '; (1 << 20) + 1]).unwrap();
    let err = fails_within(&r, 2, &["status"]);
    assert!(
        err.contains("manifest.json") && err.contains("larger than 1 MiB"),
        "{err}"
    );
    std::fs::remove_file(&manifest).unwrap();
    mkfifo(&manifest);
    let err = fails_within(&r, 2, &["status"]);
    assert!(
        err.contains("manifest.json") && err.contains("not a regular file"),
        "{err}"
    );
}

#[test]
fn a_journal_of_nul_bytes_with_no_line_break_is_refused_quickly() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let journal = r.state().join("journal.jsonl");
    let beads = r.beads_bytes();
    // 1 GiB of NUL bytes (sparse: no disk), no newline: no line splice writes is that long.
    std::fs::write(&journal, b"").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&journal)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    for args in [
        vec!["status"],
        vec!["list"],
        vec!["transition", "park", "--bead", &id, "--reason", "r"],
    ] {
        let started = Instant::now();
        let err = fails_within(&r, 2, &args);
        assert!(err.contains("journal.jsonl"), "{args:?}: {err}");
        assert!(err.contains("no line break"), "{args:?}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{args:?} took {:?}",
            started.elapsed()
        );
        assert_eq!(
            std::fs::metadata(&journal).unwrap().len(),
            1 << 30,
            "nothing cut"
        );
        assert_eq!(r.beads_bytes(), beads, "nothing written");
    }
}

#[test]
fn a_bead_file_over_its_bound_is_refused_naming_it() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let path = r.state().join("beads").join(format!("{id}.json"));
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(1 << 30).unwrap();
    drop(f);
    let err = fails_within(
        &r,
        2,
        &["transition", "park", "--bead", &id, "--reason", "r"],
    );
    assert!(err.contains(&format!("{id}.json")), "{err}");
    assert!(err.contains("larger than 16 MiB"), "{err}");
}
