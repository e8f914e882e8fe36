use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use super::*;

/// Run `script` under `/bin/sh` in `dir` inside `sandbox`; its exit code and stderr.
fn sh(sandbox: &Sandbox, dir: &Path, script: &str) -> (i32, String) {
    let mut command = Command::new("/bin/sh");
    command.args(["-c", script]).current_dir(dir).env_clear();
    command.envs(std::env::vars_os().filter(|(k, _)| sandbox.keeps(k)));
    #[cfg(target_os = "linux")]
    // SAFETY: the entry makes only system calls.
    unsafe {
        command.pre_exec(sandbox.entry());
    }
    let out = command.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn system() -> Vec<PathBuf> {
    ["/usr", "/bin", "/lib", "/lib64", "/etc"]
        .iter()
        .map(PathBuf::from)
        .collect()
}

/// Can this kernel sandbox? With `SPLICE_SANDBOX_TESTS=1` (`.ci/run`) it must.
fn usable() -> bool {
    match probe().usable() {
        Ok(()) => true,
        Err(why) if std::env::var_os("SPLICE_SANDBOX_TESTS").is_some_and(|v| v == "1") => {
            panic!("SPLICE_SANDBOX_TESTS=1 and no sandbox here: {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            false
        }
    }
}

#[test]
fn writes_only_beneath_the_writable_roots_and_reads_only_the_allowed() {
    if !usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (open, shut, secret) = (
        dir.path().join("open"),
        dir.path().join("shut"),
        dir.path().join("secret"),
    );
    for d in [&open, &shut, &secret] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::write(shut.join("kept"), "kept").unwrap();
    std::fs::write(secret.join("key"), "key").unwrap();
    let sandbox = Sandbox::prepare(&Policy {
        read: [system(), vec![shut.clone()]].concat(),
        write: vec![open.clone()],
        devices: vec![PathBuf::from("/dev/null")],
        env: vec!["PATH".into()],
    })
    .unwrap();
    assert_eq!(sh(&sandbox, &open, "echo x > made && cat made").0, 0);
    let (code, _) = sh(&sandbox, &open, "echo y > ../shut/kept");
    assert_ne!(code, 0, "a write outside the writable roots");
    assert_eq!(std::fs::read_to_string(shut.join("kept")).unwrap(), "kept");
    assert_eq!(sh(&sandbox, &open, "cat ../shut/kept >/dev/null").0, 0);
    assert_ne!(
        sh(&sandbox, &open, "cat ../secret/key").0,
        0,
        "an unlisted read"
    );
    assert_ne!(
        sh(&sandbox, &open, "ln ../shut/kept link").0,
        0,
        "a hard link in"
    );
    assert_ne!(sh(&sandbox, &open, "mknod dev c 1 3").0, 0, "a device node");
}

#[test]
fn the_environment_is_an_allow_list() {
    let sandbox = Sandbox {
        #[cfg(target_os = "linux")]
        ruleset: std::fs::File::open("/dev/null").unwrap().into(),
        #[cfg(target_os = "linux")]
        filter: Vec::new(),
        #[cfg(target_os = "linux")]
        caps: caps::Drop::for_this_process(),
        env: vec!["PATH".into(), "SPLICE_*".into()],
        abi: 0,
        policy: Policy::default(),
    };
    for (name, kept) in [
        ("PATH", true),
        ("SPLICE_BEAD", true),
        ("SPLICE", false),
        ("PATHX", false),
        ("SSH_AUTH_SOCK", false),
        ("GH_TOKEN", false),
    ] {
        assert_eq!(sandbox.keeps(OsStr::new(name)), kept, "{name}");
    }
}

#[test]
fn namespaces_unix_sockets_and_signals_outside_are_refused() {
    if !usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::prepare(&Policy {
        read: system(),
        write: vec![dir.path().to_path_buf()],
        devices: vec![PathBuf::from("/dev/null")],
        env: vec!["PATH".into()],
    })
    .unwrap();
    if Path::new("/usr/bin/unshare").exists() {
        let (code, err) = sh(&sandbox, dir.path(), "unshare -Ur true");
        assert_ne!(code, 0, "a user namespace: {err}");
    }
    // The test process is outside the sandbox: a signal to it is refused.
    let me = std::process::id();
    let (code, _) = sh(&sandbox, dir.path(), &format!("kill -0 {me}"));
    assert_ne!(code, 0, "a signal to a process outside");
    assert_eq!(sh(&sandbox, dir.path(), "kill -0 $$").0, 0, "its own");
}
