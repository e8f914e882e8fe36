//! Bad input gets a clear message naming the file or field, exit 2, no panic, and no change.

mod common;

use common::Repo;

#[test]
fn a_bead_with_broken_json_is_named() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let path = r.state().join("beads").join(format!("{id}.json"));
    std::fs::write(&path, "{\"id\": \"x\", ").unwrap();
    let before = r.beads_bytes();
    let journal = r.journal();
    for args in [
        vec!["transition", "show", "--bead", id.as_str()],
        vec![
            "transition",
            "claim",
            "--bead",
            id.as_str(),
            "--holder",
            "a",
        ],
    ] {
        let err = r.fails(2, &args);
        assert!(
            err.contains(&format!("{id}.json")) && err.contains("not a valid bead"),
            "{err}"
        );
    }
    assert_eq!(r.beads_bytes(), before);
    assert_eq!(r.journal(), journal);
}

#[test]
fn a_manifest_with_an_unknown_step_is_named_with_its_json_path() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let manifest = splice::model::manifest::DEFAULT_MANIFEST.replace(
        "\"leaf\": [\"generate-spec\", \"implement\"",
        "\"leaf\": [\"generate-spec\", \"implemnt\"",
    );
    r.write(".splice/manifest.json", &manifest);
    let before = r.beads_bytes();
    let err = r.fails(
        2,
        &[
            "transition",
            "claim",
            "--bead",
            &id,
            "--holder",
            "a",
            "--dispatch",
        ],
    );
    assert!(err.contains("manifest.json"), "{err}");
    assert!(
        err.contains("routes.leaf[1]: unknown step \"implemnt\""),
        "{err}"
    );
    assert_eq!(r.beads_bytes(), before);
}

#[test]
fn manifest_validation_names_every_problem() {
    let text = r#"{
      "routes": {"root": ["a"], "compound": [], "leaf": ["a", "b"]},
      "steps": [
        {"name": "a", "floors": [{"kind": "vibes"}], "relax": ["yolo"]},
        {"name": "a"}
      ]
    }"#;
    let problems = splice::model::Manifest::parse(text).unwrap_err().0;
    let expect = [
        "steps[0].floors[0].kind: unknown floor kind \"vibes\"",
        "steps[0].relax[0]: bad autonomy level \"yolo\"",
        "steps[1].name: duplicate step \"a\"",
        "routes.compound: route without steps",
        "routes.leaf[1]: unknown step \"b\"",
    ];
    for e in expect {
        assert!(
            problems.iter().any(|p| p.starts_with(e)),
            "missing {e:?} in {problems:#?}"
        );
    }
    let err = splice::model::Manifest::parse("{\"routes\": 3}").unwrap_err();
    assert!(err.to_string().contains("routes"), "{err}");
}

#[test]
fn the_default_manifest_is_valid() {
    let m = splice::model::Manifest::default_manifest();
    assert_eq!(m.entry_step("root"), Some("create-prp"));
    assert_eq!(m.entry_step("leaf"), Some("generate-spec"));
    assert!(m.step("generate-design").unwrap().optional);
    assert!(m.step("create-prp").unwrap().planning);
    assert!(m.step("delegate").unwrap().run.is_none());
}

#[test]
fn a_missing_state_dir_is_explained() {
    let r = Repo::new();
    let err = r.fails(2, &["transition", "show", "--bead", "sp-1234"]);
    assert!(
        err.contains(".splice") && err.contains("splice init"),
        "{err}"
    );
    let err = r.fails(
        2,
        &[
            "transition",
            "claim",
            "--bead",
            "sp-1234",
            "--holder",
            "a",
            "--dir",
            "elsewhere",
        ],
    );
    assert!(err.contains("elsewhere"), "{err}");
    assert!(!r.state().exists());
}

#[test]
fn a_bad_config_is_named() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    r.write(".splice/config.toml", "[limits]\njobs = \"many\"\n");
    let err = r.fails(2, &["transition", "autonomy", "--bead", &id]);
    assert!(err.contains("config.toml"), "{err}");
}

#[test]
fn jobs_0_on_the_command_line_is_refused_as_in_the_config() {
    // `[limits] jobs = 0` was refused, `--jobs 0` dispatched one at a time.
    let r = Repo::new();
    r.task("T", &[]);
    let before = r.beads_bytes();
    let journal = r.journal();
    for args in [
        vec!["run", "--jobs", "0"],
        vec!["pass", "--jobs", "0"],
        vec!["pass", "--dry-run", "--jobs", "0"],
        vec!["drive", "--json", "--jobs", "0"],
    ] {
        let err = r.fails(2, &args);
        assert!(
            err.contains("--jobs") && err.contains("0 would never dispatch; use at least 1"),
            "{args:?}: {err}"
        );
    }
    r.write(".splice/config.toml", "[limits]\njobs = 0\n");
    let err = r.fails(2, &["run"]);
    assert!(
        err.contains("0 would never dispatch; use at least 1"),
        "{err}"
    );
    assert_eq!(r.beads_bytes(), before);
    assert_eq!(r.journal(), journal);
    assert!(
        !r.state().join("runs").exists()
            || std::fs::read_dir(r.state().join("runs"))
                .unwrap()
                .next()
                .is_none()
    );
}

#[test]
fn bad_ids_and_arguments_never_panic() {
    let r = Repo::new();
    r.task("T", &[]);
    for (args, names) in [
        (
            vec!["transition", "show", "--bead", "../../etc/passwd"],
            "\"../../etc/passwd\" is not a bead id",
        ),
        (
            vec!["transition", "claim", "--bead", "", "--holder", "a"],
            "\"\" is not a bead id",
        ),
        (
            vec![
                "transition",
                "record-exit",
                "--bead",
                "x",
                "--holder",
                "a",
                "--exit",
                "ok",
                "--usage",
                "{",
            ],
            "--usage is not JSON",
        ),
        (
            vec!["transition", "complete", "--bead", "sp-zzzz", "--step", "x"],
            "no bead sp-zzzz",
        ),
        (
            vec!["transition", "nonsense"],
            "unrecognized subcommand 'nonsense'",
        ),
    ] {
        let out = r.run(&args);
        common::no_panic(&out);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(names), "{args:?} should say {names:?}: {err}");
    }
}

#[test]
fn splice_dir_env_and_dir_flag_find_the_store() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let elsewhere = tempfile::tempdir().unwrap();
    let out = common::hermetic_splice(&mut std::process::Command::new(env!(
        "CARGO_BIN_EXE_splice"
    )))
    .args(["transition", "step", "--bead", &id])
    .current_dir(elsewhere.path())
    .env("SPLICE_DIR", r.state())
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let step: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(step["bead"], id.as_str(), "SPLICE_DIR: {step}");
    let out = common::hermetic_splice(&mut std::process::Command::new(env!(
        "CARGO_BIN_EXE_splice"
    )))
    .args(["transition", "step", "--bead", &id, "--dir"])
    .arg(r.path())
    .current_dir(elsewhere.path())
    .env_remove("SPLICE_DIR")
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let step: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(step["bead"], id.as_str(), "--dir: {step}");
    // From a subdirectory, the nearest ancestor holding .splice/ is found.
    std::fs::create_dir_all(r.path().join("a/b")).unwrap();
    let out = r
        .cmd(&["transition", "step", "--bead", &id])
        .current_dir(r.path().join("a/b"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let step: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(step["bead"], id.as_str(), "from a subdirectory: {step}");
}

#[test]
fn a_bead_from_a_newer_splice_is_refused_and_an_older_one_is_rewritten_in_this_shape() {
    let r = Repo::new();
    let id = r.task("T", &[]);
    let path = r.state().join("beads").join(format!("{id}.json"));
    let mut bead = r.bead(&id);
    assert_eq!(
        bead["schema_version"], 1,
        "a new bead is written in this shape"
    );
    // An older file (no schema_version) is read, and the writer rewrites it in this shape.
    bead.as_object_mut().unwrap().remove("schema_version");
    std::fs::write(&path, serde_json::to_vec_pretty(&bead).unwrap()).unwrap();
    r.ok(&[
        "transition",
        "set-autonomy",
        "--bead",
        &id,
        "--level",
        "wave",
    ]);
    assert_eq!(r.bead(&id)["schema_version"], 1);
    // A newer one is refused, naming the file, and nothing changes.
    let mut newer = r.bead(&id);
    newer["schema_version"] = 99.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&newer).unwrap()).unwrap();
    let before = r.beads_bytes();
    let journal = r.journal();
    let err = r.fails(
        2,
        &[
            "transition",
            "set-autonomy",
            "--bead",
            &id,
            "--level",
            "deep",
        ],
    );
    assert!(
        err.contains(&format!("{id}.json")) && err.contains("newer than this splice reads"),
        "{err}"
    );
    // Issue 9 (13): reads go on past it, and `status` shows why it rests.
    let status = r.run(&["status"]);
    assert_eq!(status.status.code(), Some(0));
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("newer than this splice reads"), "{text}");
    assert_eq!(r.beads_bytes(), before);
    assert_eq!(r.journal(), journal);
}

#[test]
fn a_routing_record_with_an_effect_splice_never_writes_is_named_and_changes_nothing() {
    // The switch cap counts a record's effect: a hand-written effect is refused, not read as a
    // firing that moved nothing.
    let r = Repo::new();
    let id = r.task("T", &[]);
    let path = r.state().join("beads").join(format!("{id}.json"));
    let mut bead: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    bead["pipeline"]["routing"] = serde_json::json!([{
        "step": "implement", "when": "refused", "matched": "", "effect": "teleport",
        "from_route": "leaf", "from_step": "implement", "seq": 1, "at": "2026-01-01T00:00:00Z"
    }]);
    std::fs::write(&path, serde_json::to_string_pretty(&bead).unwrap()).unwrap();
    let before = r.beads_bytes();
    let journal = r.journal();
    let err = r.fails(2, &["transition", "show", "--bead", id.as_str()]);
    assert!(
        err.contains(&format!("{id}.json")) && err.contains("teleport"),
        "{err}"
    );
    assert_eq!(r.beads_bytes(), before);
    assert_eq!(r.journal(), journal);
}
