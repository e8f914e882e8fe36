//! The proposal-file protocol over a real store: good lines are applied through the writer and
//! journaled; forged, stale and malformed ones are refused with their line and change nothing.

use std::fs;
use std::path::{Path, PathBuf};

use super::*;
use crate::model::Bead;
use crate::model::Kind;
use crate::model::bead::Lease;
use crate::store::Store;

const NOW: &str = "2026-02-03T04:05:06Z";
const SECRET: &str = "the-job-secret";
const HOLDER: &str = "run:host:1:r";

/// A store holding `sp-a`, a root at `step`, claimed by a cluster job whose credential is
/// [`SECRET`], at seq 5.
fn store_at(step: &str) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join(".splice/beads")).unwrap();
    let store = Store::discover(Some(dir.path())).unwrap();
    let mut bead = Bead::new("sp-a".into(), "a".into(), String::new(), "then");
    bead.pipeline.kind = Kind::Root;
    bead.pipeline.route = "root".into();
    bead.pipeline.step = step.into();
    bead.pipeline.seq = 5;
    bead.pipeline.lease = Some(Box::new(Lease {
        holder: HOLDER.into(),
        since: "then".into(),
        credential_sha256: Some(sha256_hex(SECRET)),
        job: Some("4242".into()),
    }));
    fs::write(store.bead_path("sp-a"), bead.to_file_bytes()).unwrap();
    (dir, store)
}

fn runner(store: &Store) -> Ctx<'_> {
    Ctx {
        who: Who::Runner,
        holder: Some(HOLDER.into()),
        run: Some("r".into()),
        ..Ctx::person(store, NOW)
    }
}

fn expected(step: &str) -> Expected {
    Expected {
        bead: "sp-a".into(),
        step: step.into(),
        attempt: 1,
        seq: 5,
        credential_sha256: sha256_hex(SECRET),
    }
}

fn handed(step: &str) -> Handed {
    Handed {
        step: step.into(),
        attempt: 1,
        seq: 5,
        credential: SECRET.into(),
    }
}

fn propose_call(step: &str) -> Call {
    Call::Propose(ProposeLine {
        step: step.into(),
        artifact: "design.md".into(),
        holder: Some(HOLDER.into()),
        ..ProposeLine::default()
    })
}

fn children_call() -> Call {
    let child = |title: &str, depends_on: Vec<usize>| ChildSpec {
        title: title.into(),
        description: String::new(),
        scenarios: Vec::new(),
        files: Vec::new(),
        depends_on,
        priority: None,
    };
    Call::Split(ChildrenLine {
        children: vec![child("one", vec![]), child("two", vec![0])],
        ..ChildrenLine::default()
    })
}

/// The proposal file in `dir` holding `lines` (each serialized and newline-terminated).
fn file_with(dir: &Path, lines: &[String]) -> PathBuf {
    let path = dir.join("proposals.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(&path, text).unwrap();
    path
}

fn line(call: &Call, bead: &str, handed: &Handed) -> String {
    serde_json::to_string(&Line::new(call, bead, handed)).unwrap()
}

/// The state's bytes: every bead file and the journal.
fn state(store: &Store) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(store.dir().join("beads"))
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.push((
        "journal".into(),
        fs::read(store.journal_path()).unwrap_or_default(),
    ));
    out.sort();
    out
}

fn kinds(outcomes: &[Outcome]) -> Vec<(usize, Option<&str>)> {
    outcomes
        .iter()
        .map(|o| (o.line, o.kind.as_deref()))
        .collect()
}

#[test]
fn a_good_propose_line_is_applied_and_journaled() {
    let (dir, store) = store_at("generate-design");
    let path = file_with(
        dir.path(),
        &[line(
            &propose_call("generate-design"),
            "sp-a",
            &handed("generate-design"),
        )],
    );
    let out = apply_file(&runner(&store), &path, &expected("generate-design")).unwrap();
    assert_eq!(kinds(&out), [(1, None)], "{out:?}");
    assert!(out[0].applied);
    let bead = store.read_bead("sp-a").unwrap();
    let proposal = bead.pipeline.proposal.expect("the proposal is on the bead");
    assert_eq!(proposal.artifact, "design.md");
    assert_eq!(proposal.holder.as_deref(), Some(HOLDER));
    assert_eq!(bead.pipeline.seq, 6);
    let journal = fs::read_to_string(store.journal_path()).unwrap();
    assert!(journal.contains("\"verb\":\"propose\""), "{journal}");
}

#[test]
fn a_good_split_line_creates_the_children() {
    let (dir, store) = store_at("to-issues");
    let path = file_with(
        dir.path(),
        &[line(&children_call(), "sp-a", &handed("to-issues"))],
    );
    let out = apply_file(&runner(&store), &path, &expected("to-issues")).unwrap();
    assert_eq!(kinds(&out), [(1, None)], "{out:?}");
    let two = store.read_bead("sp-a.2").unwrap();
    assert_eq!(two.title, "two");
    assert_eq!(two.dependencies[0].depends_on_id, "sp-a.1");
    let parent = store.read_bead("sp-a").unwrap();
    assert_eq!(
        parent.pipeline.split.unwrap().children,
        ["sp-a.1", "sp-a.2"]
    );
}

#[test]
fn forged_and_stale_lines_are_refused_and_change_nothing() {
    let step = "generate-design";
    let (dir, store) = store_at(step);
    let good = handed(step);
    let forged = Handed {
        credential: "guessed".into(),
        ..good.clone()
    };
    let other_step = Handed {
        step: "create-prp".into(),
        ..good.clone()
    };
    let other_attempt = Handed {
        attempt: 2,
        ..good.clone()
    };
    let old_seq = Handed {
        seq: 4,
        ..good.clone()
    };
    let call = propose_call(step);
    let lines = [
        line(&call, "sp-a", &forged),
        line(&call, "sp-b", &good),
        line(&call, "sp-a", &other_step),
        line(&call, "sp-a", &other_attempt),
        line(&call, "sp-a", &old_seq),
    ];
    let before = state(&store);
    let path = file_with(dir.path(), &lines);
    let out = apply_file(&runner(&store), &path, &expected(step)).unwrap();
    let want = [
        (1, Some("forged")),
        (2, Some("stale")),
        (3, Some("stale")),
        (4, Some("stale")),
        (5, Some("stale")),
    ];
    assert_eq!(kinds(&out), want);
    let messages: Vec<&str> = out.iter().map(|o| o.message.as_deref().unwrap()).collect();
    assert!(
        messages[1].contains("bead sp-b, but the job was handed sp-a"),
        "{messages:?}"
    );
    assert!(messages[2].contains("step create-prp"), "{messages:?}");
    assert!(
        messages[3].contains("attempt 2, but the job was handed 1"),
        "{messages:?}"
    );
    assert!(
        messages[4].contains("seq 4, but the job was handed 5"),
        "{messages:?}"
    );
    assert!(out.iter().all(|o| !o.applied));
    assert_eq!(state(&store), before, "nothing was written");
}

#[test]
fn a_line_gets_the_refusals_a_local_call_would() {
    let (dir, store) = store_at("generate-design");
    let good = handed("generate-design");
    // The job's --step names another step than the bead is at.
    let lines = [line(&propose_call("create-prp"), "sp-a", &good)];
    let before = state(&store);
    let path = file_with(dir.path(), &lines);
    let out = apply_file(&runner(&store), &path, &expected("generate-design")).unwrap();
    assert_eq!(kinds(&out), [(1, Some("wrong-step"))]);
    assert_eq!(state(&store), before);
}

#[test]
fn a_line_acts_as_the_claims_holder_whatever_holder_it_named() {
    // The holder a job names is the runner that dispatched it; a runner that adopted the job
    // after that one died holds the claim now. The credential is the job's authority.
    let (dir, store) = store_at("generate-design");
    let good = handed("generate-design");
    let named = Call::Propose(ProposeLine {
        holder: Some("run:h:1:a-dead-runner".into()),
        expect_seq: Some(1),
        ..match propose_call("generate-design") {
            Call::Propose(p) => p,
            _ => unreachable!(),
        }
    });
    let path = file_with(dir.path(), &[line(&named, "sp-a", &good)]);
    let out = apply_file(&runner(&store), &path, &expected("generate-design")).unwrap();
    assert!(out[0].applied, "{out:?}");
    let proposal = store.read_bead("sp-a").unwrap().pipeline.proposal.unwrap();
    assert_eq!(proposal.holder.as_deref(), Some(HOLDER));
}

#[test]
fn a_malformed_line_is_refused_by_number_and_the_others_still_apply() {
    let step = "generate-design";
    let (dir, store) = store_at(step);
    let call = propose_call(step);
    let mut unknown = Line::new(&call, "sp-a", &handed(step));
    unknown.verb = "approve".into();
    let lines = [
        line(&call, "sp-a", &handed(step)),
        "{\"v\": 1, \"verb\": \"propose\"".to_string(),
        serde_json::to_string(&unknown).unwrap(),
        line(&call, "sp-a", &handed(step)).replace("\"v\":1", "\"v\":2"),
        line(&call, "sp-a", &handed(step)),
    ];
    let path = file_with(dir.path(), &lines);
    let out = apply_file(&runner(&store), &path, &expected(step)).unwrap();
    let want = [
        (1, None),
        (2, Some("malformed")),
        (3, Some("malformed")),
        (4, Some("malformed")),
        (5, None),
    ];
    assert_eq!(kinds(&out), want, "{out:?}");
    assert!(
        out[1]
            .message
            .as_deref()
            .unwrap()
            .starts_with("line 2: not JSON")
    );
    assert!(
        out[2]
            .message
            .as_deref()
            .unwrap()
            .contains("unknown verb \"approve\"")
    );
    assert!(
        out[3]
            .message
            .as_deref()
            .unwrap()
            .contains("unknown version 2")
    );
    let verbs: Vec<&str> = out.iter().map(|o| o.verb.as_str()).collect();
    assert_eq!(verbs, ["propose", "?", "approve", "propose", "propose"]);
    assert_eq!(
        store.read_bead("sp-a").unwrap().pipeline.seq,
        7,
        "two applied"
    );
}

#[test]
fn a_missing_file_is_no_proposals() {
    let (dir, store) = store_at("generate-design");
    let path = dir.path().join("never-written.jsonl");
    let out = apply_file(&runner(&store), &path, &expected("generate-design")).unwrap();
    assert!(out.is_empty());
}

#[test]
fn a_link_at_the_path_is_not_followed() {
    let step = "generate-design";
    let (dir, store) = store_at(step);
    let real = file_with(
        dir.path(),
        &[line(&propose_call(step), "sp-a", &handed(step))],
    );
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let before = state(&store);
    let err = apply_file(&runner(&store), &link, &expected(step)).unwrap_err();
    assert!(err.to_string().contains("link.jsonl"), "{err}");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(state(&store), before);
    let err = append(
        &link,
        &Line::new(&propose_call(step), "sp-a", &handed(step)),
    )
    .unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
}

#[test]
fn an_over_large_file_is_refused_as_a_whole() {
    let step = "generate-design";
    let (dir, store) = store_at(step);
    let path = file_with(
        dir.path(),
        &[line(&propose_call(step), "sp-a", &handed(step))],
    );
    let file = fs::OpenOptions::new().append(true).open(&path).unwrap();
    file.set_len(MAX_FILE + 1).unwrap();
    let before = state(&store);
    let err = apply_file(&runner(&store), &path, &expected(step)).unwrap_err();
    assert!(err.to_string().contains("proposals.jsonl"), "{err}");
    assert!(err.to_string().contains("larger than"), "{err}");
    assert_eq!(state(&store), before);
}

#[test]
fn append_writes_one_line_a_call_with_mode_0600() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    let call = children_call();
    append(&path, &Line::new(&call, "sp-a", &handed("to-issues"))).unwrap();
    append(&path, &Line::new(&call, "sp-a", &handed("to-issues"))).unwrap();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    let (parsed, back) = Line::parse(lines[0]).unwrap();
    assert_eq!(back, call);
    assert_eq!(parsed.credential, SECRET);
}

#[test]
fn a_resplit_line_replaces_the_split_and_bad_arguments_are_invalid() {
    let step = "to-issues";
    let (dir, store) = store_at(step);
    let split = line(&children_call(), "sp-a", &handed(step));
    let Call::Split(children) = children_call() else {
        unreachable!()
    };
    let resplit = line(&Call::Resplit(children), "sp-a", &handed(step));
    let empty = Call::Propose(ProposeLine {
        artifact: " ".into(),
        ..ProposeLine::default()
    });
    let lines = [split, resplit, line(&empty, "sp-a", &handed(step))];
    let path = file_with(dir.path(), &lines);
    let out = apply_file(&runner(&store), &path, &expected(step)).unwrap();
    assert_eq!(
        kinds(&out),
        [(1, None), (2, None), (3, Some("invalid"))],
        "{out:?}"
    );
    assert_eq!(
        out[2].message.as_deref(),
        Some("--artifact must not be empty")
    );
    let parent = store.read_bead("sp-a").unwrap();
    assert_eq!(
        parent.pipeline.split.unwrap().children,
        ["sp-a.3", "sp-a.4"]
    );
    assert!(store.read_bead("sp-a.1").unwrap().is_closed(), "superseded");
}

#[test]
fn a_split_line_s_children_are_checked_as_a_children_file_is() {
    let step = "to-issues";
    let (dir, store) = store_at(step);
    let mut bad = Line::new(&children_call(), "sp-a", &handed(step));
    bad.args["children"][1]["depends_on"] = serde_json::json!([1]);
    let path = file_with(dir.path(), &[serde_json::to_string(&bad).unwrap()]);
    let before = state(&store);
    let out = apply_file(&runner(&store), &path, &expected(step)).unwrap();
    assert_eq!(kinds(&out), [(1, Some("malformed"))]);
    let message = out[0].message.as_deref().unwrap();
    assert!(message.contains("args.children[1].depends_on"), "{message}");
    assert_eq!(state(&store), before);
}

#[test]
fn a_line_whose_claim_was_released_is_not_your_bead() {
    let step = "generate-design";
    let (dir, store) = store_at(step);
    super::super::claim::release(&runner(&store), "sp-a", HOLDER).unwrap();
    let before = state(&store);
    let path = file_with(
        dir.path(),
        &[line(&propose_call(step), "sp-a", &handed(step))],
    );
    let out = apply_file(&runner(&store), &path, &expected(step)).unwrap();
    assert_eq!(kinds(&out), [(1, Some("not-your-bead"))]);
    assert_eq!(state(&store), before);
}
