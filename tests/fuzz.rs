//! Fuzz targets for every parser of outside input and for the store, run on the stable
//! toolchain for a bounded budget: each replays its checked-in corpus (`tests/fuzz/corpus/`,
//! plus seeds read from `snapshots/`, `manifest/` and `state/`), then runs seeded mutations of
//! it. `tests/fuzz/README.md` says how to run longer and how to add to a corpus; `fuzz/` holds
//! the same targets for libFuzzer.

#[path = "fuzz/harness.rs"]
mod harness;
#[path = "fuzz/mutate.rs"]
mod mutate;
#[path = "fuzz/targets/mod.rs"]
mod targets;

use targets::by_name;

macro_rules! fuzz_tests {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                harness::run(by_name($name));
            }
        )*

        #[test]
        fn every_target_has_a_test_and_a_corpus() {
            let tested = [$($name),*];
            for t in targets::ALL {
                assert!(tested.contains(&t.name), "target {} has no test", t.name);
                let dir = targets::corpus_dir(t.corpus);
                let files = targets::files_in(&dir, |_| true);
                assert!(
                    !files.is_empty() || !(t.seeds)().is_empty(),
                    "target {} has no corpus in {}",
                    t.name,
                    dir.display()
                );
            }
        }
    };
}

fuzz_tests! {
    bead => "bead",
    bead_write => "bead-write",
    journal_tail => "journal-tail",
    journal_committed => "journal-committed",
    recovery => "recovery",
    manifest => "manifest",
    config => "config",
    decide => "decide",
    spec => "spec",
    review => "review",
    headings => "headings",
    junit => "junit",
    libtest => "libtest",
    test_output => "test-output",
    sarif => "sarif",
    analyzer_output => "analyzer-output",
    gherkin => "gherkin",
    coverage => "coverage",
    forge => "forge",
    template => "template",
    prompt => "prompt",
    children => "children",
    usage => "usage",
    progress => "progress",
    guard => "guard",
    bd_import => "bd-import",
    bd_sync => "bd-sync",
    proposals => "proposals",
}

/// What the targets found in code this test does not own, each reproduced in a few lines and
/// kept as a regression test: the store's four (fixed by its hostile-state hardening) and a bead
/// number that changed on every rewrite (fixed by serde_json's `float_roundtrip`).
mod found {
    use splice::store::{Change, Reads, Transition};

    use crate::targets::store::{ID, Sandbox};

    const T: Transition<'static> = Transition {
        verb: "fuzz",
        actor: "fuzz",
        now: "2026-01-01T00:00:00Z",
        expect_seq: None,
    };

    /// The target `bead` found it: `parse_bead` (src/store/mod.rs) fell back to a parse that
    /// names the failing field, and that parse stopped after the first JSON value, so a file
    /// with bytes after its object was read, and its `schema_version` never checked.
    #[test]
    fn a_bead_file_with_trailing_garbage_is_refused() {
        let sb = Sandbox::new();
        let text = r#"{"id": "sp-fuzz", "title": "t", "schema_version": 99} and more"#;
        std::fs::write(sb.store.bead_path(ID), text).unwrap();
        let read = sb.store.read_bead(ID);
        assert!(read.is_err(), "read as {read:?}");
    }

    /// The target `bead-write` found it: the store read
    /// `beads/<name>.json` but the shell published the image to `beads/<its id>.json`, so a
    /// file whose `id` was `../outside` made any verb write `.splice/outside.json` (and one
    /// whose id named another bead overwrote that bead).
    #[test]
    fn a_bead_whose_id_is_not_its_file_name_is_never_written_elsewhere() {
        let sb = Sandbox::new();
        let text = r#"{"id": "../outside", "title": "t"}"#;
        std::fs::write(sb.store.bead_path(ID), text).unwrap();
        let _ = sb.store.apply(&T, &Reads::subject(ID), |fresh| {
            Ok(Change::one(fresh.subject.clone(), None, ()))
        });
        let outside = sb.store.dir().join("outside.json");
        assert!(!outside.exists(), "wrote {}", outside.display());
    }

    /// The target `recovery` found it: recovery rolled the journal's
    /// last uncommitted record forward by writing `beads/<id>.json` for each image, whatever
    /// the id, so a journal line whose image had the id `../outside` wrote
    /// `.splice/outside.json` on the next writing verb (and an absolute id, anywhere).
    #[test]
    fn recovery_never_rolls_forward_a_bead_id_that_is_not_a_file_name() {
        let sb = Sandbox::new();
        let line = r#"{"tx":0,"verb":"x","actor":"a","at":"t","changes":[],"beads":[{"id":"../outside","title":"t"}]}"#;
        std::fs::write(sb.store.journal_path(), format!("{line}\n")).unwrap();
        let _ = sb.store.create(&T, &[], |_| Ok(Change::nothing(())));
        let outside = sb.store.dir().join("outside.json");
        assert!(!outside.exists(), "wrote {}", outside.display());
    }

    /// The bad-input test found it (tests/bad_input_matrix.rs, broken_journals): recovery of a
    /// last record holding two images of one bead wrote both temp files under one name, renamed
    /// the first, and failed on the second; every writing verb then exited 2 with
    /// "beads/<id>.json: No such file or directory", naming neither the journal nor the cause.
    #[test]
    fn recovery_of_a_record_naming_one_bead_twice_does_not_wedge_the_store() {
        let sb = Sandbox::new();
        let image = r#"{"id":"sp-fuzz","title":"t"}"#;
        let line = format!(
            r#"{{"tx":0,"verb":"x","actor":"a","at":"t","changes":[],"beads":[{image},{image}]}}"#
        );
        std::fs::write(sb.store.journal_path(), format!("{line}\n")).unwrap();
        for _ in 0..2 {
            if let Err(e) = sb.store.create(&T, &[], |_| Ok(Change::nothing(()))) {
                panic!("a writer failed after recovery: {e}");
            }
        }
    }

    /// The target `bead-write` found it: serde_json, built without its `float_roundtrip`
    /// feature (Cargo.toml), reads some numbers a bit off, so a number in a field splice does
    /// not know is not written back untouched (src/model/bead/mod.rs promises it is).
    #[test]
    fn a_float_in_a_bead_survives_a_rewrite() {
        let sb = Sandbox::new();
        let number = "18446744073709551616.8446744073709552e+19";
        let text = format!(r#"{{"id": "sp-fuzz", "title": "t", "metadata": {{"x": {number}}}}}"#);
        std::fs::write(sb.store.bead_path(ID), text).unwrap();
        let bead = sb.store.read_bead(ID).unwrap();
        let read = bead.metadata["x"].as_f64().unwrap();
        assert_eq!(read, number.parse::<f64>().unwrap(), "the number read");
        std::fs::write(sb.store.bead_path(ID), bead.to_file_bytes()).unwrap();
        let again = sb.store.read_bead(ID).unwrap();
        assert_eq!(again, bead, "a rewrite changed the bead");
    }
}
