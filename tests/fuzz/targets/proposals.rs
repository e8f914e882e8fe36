//! A cluster dispatch's proposal file, as the runner applies it when the job ends
//! (`transition::proposals::apply_file`).

use splice::authority::credential::sha256_hex;
use splice::model::bead::Lease;
use splice::model::{Bead, Kind};
use splice::store::Store;
use splice::transition::proposals::{Expected, Line, apply_file};
use splice::transition::{Ctx, Who};

use super::{Format, Target, no_seeds, scratch};

/// The credential the corpus's lines carry.
const SECRET: &str = "fuzz-secret";

/// `proposals`: every non-blank line gets one outcome, in order; a line is applied only when it
/// parses, carries the job's credential and names the bead, step, attempt and seq the job was
/// handed; a line that parses serializes back to itself; when no line is applied the bead
/// files and the journal are byte for byte as they were.
pub const PROPOSALS: Target = Target {
    name: "proposals",
    run: proposals,
    corpus: "proposals",
    cases: 1_500,
    format: Format::JsonLines,
    dict: &[
        "\"v\": 2",
        "\"verb\": \"approve\"",
        "\"seq\": 4",
        "\"attempt\": 2",
        "\"bead\": \"sp-b\"",
        "\"credential\": \"guess\"",
        "\"depends_on\": [1]",
    ],
    seeds: no_seeds,
};

fn proposals(data: &[u8]) -> bool {
    let dir = scratch();
    std::fs::create_dir_all(dir.path().join(".splice/beads")).expect("mkdir");
    let store = Store::discover(Some(dir.path())).expect("the sandbox opens");
    let mut bead = Bead::new("sp-a".into(), "a".into(), String::new(), "then");
    (bead.pipeline.kind, bead.pipeline.route) = (Kind::Root, "root".into());
    (bead.pipeline.step, bead.pipeline.seq) = ("to-issues".into(), 5);
    bead.pipeline.lease = Some(Box::new(Lease {
        holder: "run:h:1:r".into(),
        since: "then".into(),
        credential_sha256: Some(sha256_hex(SECRET)),
        job: Some("7".into()),
    }));
    std::fs::write(store.bead_path("sp-a"), bead.to_file_bytes()).expect("write");
    let file = dir.path().join("proposals.jsonl");
    std::fs::write(&file, data).expect("write");
    let before = state(&store);
    let expected = Expected {
        bead: "sp-a".into(),
        step: "to-issues".into(),
        attempt: 1,
        seq: 5,
        credential_sha256: sha256_hex(SECRET),
    };
    let base = Ctx {
        who: Who::Runner,
        ..Ctx::person(&store, "2026-01-01T00:00:00Z")
    };
    let outcomes = apply_file(&base, &file, &expected).expect("a small regular file is read");
    let lines: Vec<(usize, &[u8])> = data
        .split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
        .map(|(i, l)| (i + 1, l))
        .collect();
    assert_eq!(outcomes.len(), lines.len(), "one outcome a line");
    for (outcome, (n, bytes)) in outcomes.iter().zip(&lines) {
        assert_eq!(outcome.line, *n);
        let parsed = std::str::from_utf8(bytes).ok().map(Line::parse);
        if let Some(Ok((line, call))) = &parsed {
            let again = serde_json::to_string(line).expect("serializes");
            assert_eq!(
                &Line::parse(&again).expect("reads back"),
                &(line.clone(), call.clone())
            );
        }
        if outcome.applied {
            let Some(Ok((line, _))) = parsed else {
                panic!("line {n} applied, but it does not parse")
            };
            assert_eq!(sha256_hex(&line.credential), expected.credential_sha256);
            assert_eq!(
                (line.bead.as_str(), line.step.as_str()),
                ("sp-a", "to-issues")
            );
            assert_eq!((line.attempt, line.seq), (1, 5));
        }
    }
    if outcomes.iter().all(|o| !o.applied) {
        assert!(
            state(&store) == before,
            "nothing applied, yet the state changed"
        );
    }
    !lines.is_empty()
}

/// The bead files and the journal, by name.
fn state(store: &Store) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(store.dir().join("beads"))
        .expect("beads")
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap_or_default())
        })
        .collect();
    let journal = std::fs::read(store.journal_path()).unwrap_or_default();
    out.push(("journal.jsonl".into(), journal));
    out.sort();
    out
}
