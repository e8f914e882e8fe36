//! The shell's guarantees, checked on a real directory: it owns the bump, a refusal or a broken
//! plan writes nothing, and recovery is reported as data.

use super::*;
use crate::refusal::Refusal;

const NOW: &str = "2026-02-03T04:05:06Z";

fn store_with(ids: &[&str]) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join(".splice/beads")).unwrap();
    let store = Store::discover(Some(dir.path())).unwrap();
    for id in ids {
        let mut bead = Bead::new(id.to_string(), "t".into(), String::new(), "then");
        bead.pipeline.seq = 5;
        bead.schema_version = 0;
        fs::write(store.bead_path(id), bead.to_file_bytes()).unwrap();
    }
    (dir, store)
}

fn t(expect_seq: Option<u64>) -> Transition<'static> {
    Transition {
        verb: "test",
        actor: "person",
        now: NOW,
        expect_seq,
    }
}

fn journal_len(store: &Store) -> u64 {
    fs::metadata(store.journal_path()).map_or(0, |m| m.len())
}

#[test]
fn the_shell_bumps_stamps_and_journals_every_changed_bead() {
    let (_d, store) = store_with(&["sp-a"]);
    let before = store.read_bead("sp-a").unwrap();
    let out = store
        .apply(&t(Some(5)), &Reads::subject("sp-a"), |fresh| {
            let mut after = fresh.subject.clone();
            after.title = "changed".into();
            Ok(Change::one(after, Some("why".into()), 7))
        })
        .unwrap();
    assert_eq!(out, 7);
    let bead = store.read_bead("sp-a").unwrap();
    assert_eq!((bead.pipeline.seq, bead.updated_at.as_str()), (6, NOW));
    assert_eq!(
        (bead.schema_version, bead.title.as_str()),
        (BEAD_SCHEMA, "changed")
    );
    let (records, _) = journal::read_committed(&store.journal_path(), 0).unwrap();
    assert_eq!(records.len(), 1);
    // A bead that had a file is journaled as its patch, which makes the image written.
    assert!(records[0].beads.is_empty(), "{:?}", records[0]);
    assert_eq!(records[0].patches.len(), 1);
    assert_eq!(
        records[0].patches[0].apply(&before, &records[0].at),
        Ok(bead.clone())
    );
    assert_eq!(records[0].reason.as_deref(), Some("why"));
}

#[test]
fn an_unchanged_image_is_not_written_and_a_change_of_only_those_writes_nothing() {
    let (_d, store) = store_with(&["sp-a", "sp-b"]);
    let before_b = fs::read(store.bead_path("sp-b")).unwrap();
    let reads = Reads::subject("sp-a").with_others(vec!["sp-b".into()]);
    store
        .apply(&t(None), &reads, |fresh| {
            let mut a = fresh.subject.clone();
            a.title = "changed".into();
            Ok(Change {
                beads: vec![a, fresh.others[0].clone()],
                reason: None,
                output: (),
            })
        })
        .unwrap();
    let (records, _) = journal::read_committed(&store.journal_path(), 0).unwrap();
    let ids: Vec<&str> = records[0].written().map(|(id, _)| id).collect();
    assert_eq!(ids, ["sp-a"], "only the changed bead is journaled");
    assert_eq!(fs::read(store.bead_path("sp-b")).unwrap(), before_b);
    let len = journal_len(&store);
    let out = store.apply(&t(Some(6)), &reads, |fresh| {
        Ok(Change::one(fresh.subject.clone(), Some("why".into()), 9))
    });
    assert_eq!(out.unwrap(), 9, "a no-op answers as it would");
    assert_eq!(journal_len(&store), len, "and journals nothing");
    assert_eq!(store.read_bead("sp-a").unwrap().pipeline.seq, 6);
}

#[test]
fn a_stale_expect_seq_or_a_refusing_plan_writes_nothing() {
    let (_d, store) = store_with(&["sp-a"]);
    let before = fs::read(store.bead_path("sp-a")).unwrap();
    let stale = store.apply(
        &t(Some(4)),
        &Reads::subject("sp-a"),
        |_| -> Result<Change<()>> {
            panic!("the plan must not run after a failed compare-and-swap")
        },
    );
    let refusal = stale.unwrap_err();
    assert_eq!(refusal.refusal().map(Refusal::kind), Some("stale-seq"));
    let refused = store.apply(&t(None), &Reads::subject("sp-a"), |fresh| {
        Err::<Change<()>, _>(
            Refusal::NotParked {
                bead: fresh.subject.id.to_string(),
            }
            .into(),
        )
    });
    assert!(refused.is_err());
    assert_eq!(fs::read(store.bead_path("sp-a")).unwrap(), before);
    assert_eq!(journal_len(&store), 0);
}

#[test]
fn a_plan_that_bumps_or_writes_an_unread_bead_is_a_fault_and_writes_nothing() {
    let (_d, store) = store_with(&["sp-a", "sp-b"]);
    let bumped = store.apply(&t(None), &Reads::subject("sp-a"), |fresh| {
        let mut after = fresh.subject.clone();
        after.bump(NOW);
        Ok(Change::one(after, None, ()))
    });
    assert!(matches!(bumped, Err(Error::Invalid(m)) if m.contains("bumped the seq")));
    let unread = store.apply(&t(None), &Reads::subject("sp-a"), |fresh| {
        let mut other = Bead::new("sp-b".into(), "b".into(), String::new(), NOW);
        other.pipeline.step = fresh.subject.pipeline.step.clone();
        Ok(Change::one(other, None, ()))
    });
    assert!(matches!(unread, Err(Error::Invalid(m)) if m.contains("without reading it")));
    assert_eq!(journal_len(&store), 0);
    assert_eq!(store.read_bead("sp-a").unwrap().pipeline.seq, 5);
}

#[test]
fn a_new_bead_starts_at_seq_one_and_probes_see_what_is_taken() {
    let (_d, store) = store_with(&["sp-a"]);
    let probe = vec!["sp-a".to_string(), "sp-new".to_string()];
    let taken = store
        .create(&t(None), &probe, |taken| {
            let bead = Bead::new("sp-new".into(), "n".into(), String::new(), NOW);
            Ok(Change::one(bead, None, taken.clone()))
        })
        .unwrap();
    assert_eq!(taken.into_iter().collect::<Vec<_>>(), ["sp-a"]);
    assert_eq!(store.read_bead("sp-new").unwrap().pipeline.seq, 1);
}

#[test]
fn recovery_is_reported_as_data_for_the_caller() {
    let (_d, store) = store_with(&["sp-a"]);
    fs::write(store.journal_path(), b"{\"torn").unwrap();
    store
        .apply(&t(None), &Reads::subject("sp-a"), |_| {
            Ok(Change::nothing(()))
        })
        .unwrap();
    let repairs = store.take_repairs();
    assert_eq!(
        repairs,
        [Repair::TornRecord {
            journal: store.journal_path(),
            dropped: 6
        }]
    );
    assert!(
        repairs[0]
            .to_string()
            .starts_with("recovered: truncated a torn")
    );
    assert!(store.take_repairs().is_empty(), "taken once");
    assert_eq!(journal_len(&store), 0);
}

/// Append `record` to the journal as a crash after the journal write leaves it (no marker).
fn append_uncommitted(store: &Store, mut record: journal::Record) {
    journal::append_record(&store.journal_path(), &mut record).unwrap();
}

fn record_of(beads: Vec<Bead>) -> journal::Record {
    journal::Record {
        tx: 0,
        id: 1,
        verb: "test".into(),
        actor: "person".into(),
        reason: None,
        at: NOW.into(),
        changes: beads
            .iter()
            .map(|b| journal::StepChange {
                bead: b.id.to_string(),
                from: None,
                to: b.pipeline.step.to_string(),
                seq: b.pipeline.seq,
            })
            .collect(),
        beads,
        patches: Vec::new(),
    }
}

#[test]
fn a_record_interrupted_between_its_renames_rolls_forward_and_keeps_what_is_in_place() {
    let (_d, store) = store_with(&["sp-a", "sp-b"]);
    let mut a = store.read_bead("sp-a").unwrap();
    let mut b = store.read_bead("sp-b").unwrap();
    a.bump(NOW);
    b.bump(NOW);
    b.title = "b after".into();
    append_uncommitted(&store, record_of(vec![a.clone(), b.clone()]));
    // sp-a was renamed into place before the crash (and touched since, seq unchanged).
    a.title = "a in place".into();
    fs::write(store.bead_path("sp-a"), a.to_file_bytes()).unwrap();
    let repairs = store.recover().unwrap();
    assert!(
        matches!(&repairs[..], [Repair::RolledForward { .. }]),
        "{repairs:?}"
    );
    assert_eq!(store.read_bead("sp-a").unwrap().title, "a in place");
    assert_eq!(store.read_bead("sp-b").unwrap(), b);
    let (records, _) = journal::read_committed(&store.journal_path(), 0).unwrap();
    assert_eq!(records.len(), 1);
}

/// `before` → `after` as the writer journals it.
fn patch_of(before: &Bead, after: &Bead) -> journal::Patch {
    let (b, a) = (
        serde_json::to_value(before).unwrap(),
        serde_json::to_value(after).unwrap(),
    );
    journal::Patch {
        id: after.id.to_string(),
        seq: after.pipeline.seq,
        sha: super::delta::value_sha(&a),
        ops: super::delta::diff(&b, &a),
    }
}

/// A crash after the journal write, before any bead file: recovery makes each after-image from
/// the file its patch names as base; one already in place is left; a patch whose base is not
/// the file (the file edited since, or a forged record) voids the record, and nothing is applied.
#[test]
fn an_uncommitted_patch_rolls_forward_from_its_base_and_one_that_does_not_fit_is_voided() {
    let (_d, store) = store_with(&["sp-a", "sp-b"]);
    let a0 = store.read_bead("sp-a").unwrap();
    let b0 = store.read_bead("sp-b").unwrap();
    let (mut a, mut b) = (a0.clone(), b0.clone());
    a.bump(NOW);
    a.title = "a after".into();
    a.labels.push("x".into());
    b.bump(NOW);
    b.description = "b after".into();
    let mut record = record_of(vec![]);
    record.changes = [&a, &b]
        .iter()
        .map(|x| journal::StepChange {
            bead: x.id.to_string(),
            from: None,
            to: x.pipeline.step.to_string(),
            seq: x.pipeline.seq,
        })
        .collect();
    record.patches = vec![patch_of(&a0, &a), patch_of(&b0, &b)];
    append_uncommitted(&store, record.clone());
    // sp-b was renamed into place before the crash.
    fs::write(store.bead_path("sp-b"), b.to_file_bytes()).unwrap();
    let repairs = store.recover().unwrap();
    assert!(
        matches!(&repairs[..], [Repair::RolledForward { beads, .. }] if beads == &["sp-a", "sp-b"]),
        "{repairs:?}"
    );
    assert_eq!(store.read_bead("sp-a").unwrap(), a);
    assert_eq!(store.read_bead("sp-b").unwrap(), b);

    // The next record's patch, its base edited by hand since: voided, the file left.
    let (_d, store) = store_with(&["sp-a"]);
    let a0 = store.read_bead("sp-a").unwrap();
    let mut a = a0.clone();
    a.bump(NOW);
    a.title = "a after".into();
    let mut record = record_of(vec![]);
    record.changes = vec![journal::StepChange {
        bead: "sp-a".into(),
        from: None,
        to: a.pipeline.step.to_string(),
        seq: a.pipeline.seq,
    }];
    record.patches = vec![patch_of(&a0, &a)];
    append_uncommitted(&store, record);
    let mut edited = a0.clone();
    edited.description = "by hand".into();
    fs::write(store.bead_path("sp-a"), edited.to_file_bytes()).unwrap();
    let repairs = store.recover().unwrap();
    assert!(
        matches!(&repairs[..], [Repair::Voided { why, .. }] if why.contains("not the image the record's patch was made from")),
        "{repairs:?}"
    );
    assert_eq!(store.read_bead("sp-a").unwrap(), edited);
}

#[test]
fn a_voided_record_is_never_committed_nor_rechecked() {
    let (_d, store) = store_with(&["sp-a"]);
    let mut a = store.read_bead("sp-a").unwrap();
    a.pipeline.seq = 9;
    append_uncommitted(&store, record_of(vec![a]));
    let repairs = store.recover().unwrap();
    assert!(
        matches!(&repairs[..], [Repair::Voided { why, .. }] if why.contains("seq 9")),
        "{repairs:?}"
    );
    assert_eq!(store.read_bead("sp-a").unwrap().pipeline.seq, 5);
    assert!(store.recover().unwrap().is_empty(), "reported once");
    let (records, end) = journal::read_committed(&store.journal_path(), 0).unwrap();
    assert!(records.is_empty());
    assert_eq!(end, journal_len(&store), "the void line is consumed");
}

#[test]
fn a_seq_at_its_maximum_refuses_before_anything_is_written() {
    let (_d, store) = store_with(&["sp-a"]);
    let mut a = store.read_bead("sp-a").unwrap();
    a.pipeline.seq = u64::MAX;
    fs::write(store.bead_path("sp-a"), a.to_file_bytes()).unwrap();
    // A real change (an unchanged image is no write, and so no bump to refuse).
    let out = store.apply(&t(None), &Reads::subject("sp-a"), |fresh| {
        let mut after = fresh.subject.clone();
        after.title = "changed".into();
        Ok(Change::one(after, None, ()))
    });
    let err = out.unwrap_err();
    assert!(
        err.to_string().contains("sp-a") && err.exit_code() == 2,
        "{err}"
    );
    assert_eq!(store.read_bead("sp-a").unwrap().pipeline.seq, u64::MAX);
    assert_eq!(journal_len(&store), 0);
}

#[test]
fn inside_a_checkout_the_holding_state_wins_over_a_copy_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join(".splice");
    let copy = live.join("worktrees/sp-1/.splice");
    std::fs::create_dir_all(live.join("beads")).unwrap();
    std::fs::create_dir_all(copy.join("beads")).unwrap();
    std::fs::create_dir_all(live.join("worktrees/sp-1/src")).unwrap();
    let inside = live.join("worktrees/sp-1/src");
    assert_eq!(super::holding_state(&inside), Some(live.clone()));
    assert_eq!(
        super::holding_state(&live.join("worktrees/sp-1@target")),
        Some(live)
    );
    // Outside any checkout, the nearest-ancestor rule applies.
    assert_eq!(super::holding_state(dir.path()), None);
    assert_eq!(super::holding_state(&dir.path().join("worktrees")), None);
}

#[test]
fn a_bead_holds_its_rare_records_boxed() {
    // A scan holds every bead at once (100,000 in a big campaign): each byte of a `Bead` is
    // 100 KB there. Records most beads lack are boxed, and the maps of unknown fields (`Extra`)
    // and the lists most beads leave empty (`Few`) are a pointer while empty: what a bead does
    // not have costs a pointer. A rare text (`ThinText`) costs one word, not a `Box<str>`'s two.
    let size = std::mem::size_of::<Bead>();
    eprintln!("size_of::<Bead>() = {size}");
    // 672: a word more with the kept reviews' list (`pipeline.reviews`, issue 33); 680: a word
    // more with the open calls' list (`pipeline.calls`, issue 34); 688: a word more with the
    // request's distilled intent (`pipeline.intent`, issue 35).
    assert!(size <= 688, "size_of::<Bead>() = {size}");
}

#[test]
fn a_thin_text_field_given_anything_but_a_string_is_refused_naming_the_field() {
    // The rare texts are `ThinText`s now: a hostile file must still be told which field is wrong.
    let bead = Bead::new(
        "sp-a".into(),
        "a".into(),
        String::new(),
        "2026-01-01T00:00:00Z",
    );
    let good: serde_json::Value = serde_json::from_slice(&bead.to_file_bytes()).unwrap();
    let history = serde_json::json!([{"step": "s", "seq": 1, "at": "t", "head": 5}]);
    let cases = [
        ("/pipeline/target", serde_json::json!(5), "pipeline.target"),
        (
            "/pipeline/guidance",
            serde_json::json!(["x"]),
            "pipeline.guidance",
        ),
        (
            "/pipeline/reviewed_sha",
            serde_json::json!(5),
            "pipeline.reviewed_sha",
        ),
        ("/pipeline/pr_url", serde_json::json!({}), "pipeline.pr_url"),
        (
            "/pipeline/suite_cmd",
            serde_json::json!(true),
            "pipeline.suite_cmd",
        ),
        ("/close_reason", serde_json::json!(5), "close_reason"),
        ("/status", serde_json::json!(5), "status"),
        ("/pipeline/history", history, "pipeline.history[0].head"),
        (
            "/pipeline/responses",
            serde_json::json!([]),
            "pipeline.responses",
        ),
    ];
    for (pointer, value, field) in cases {
        let mut json = good.clone();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        json.pointer_mut(parent).unwrap()[key] = value;
        let bytes = serde_json::to_vec(&json).unwrap();
        let e = parse_bead(Path::new("sp-a.json"), "sp-a", &bytes)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("(at {field})")), "{field}: {e}");
        assert!(e.contains("invalid type"), "{field}: {e}");
    }
    // And a string is read back as written.
    let mut json = good.clone();
    json["pipeline"]["target"] = "main \"quoted\"".into();
    let bytes = serde_json::to_vec(&json).unwrap();
    let bead = parse_bead(Path::new("sp-a.json"), "sp-a", &bytes).unwrap();
    assert_eq!(bead.pipeline.target.as_deref(), Some("main \"quoted\""));
}
