//! A bd / br export read by `splice import bd` (`transition::import::plan`) and written back by
//! `splice export bd` (`model::bd::to_line`).

use serde_json::Value;
use splice::model::bd;
use splice::store::Scan;
use splice::transition::import;

use super::{Format, Target, no_seeds};

/// `bd-import`: on an empty store every non-blank line is either created or a problem with
/// its line number; every bead created has a valid id, is plain (no route, no claim) and was
/// in the file; and its export gives back its line byte for byte (a record carrying splice's keys:
/// the same values, those keys aside). Input: the file.
pub const BD_IMPORT: Target = Target {
    name: "bd-import",
    run: bd_import,
    corpus: "bd",
    // Each case parses every line twice over: fewer cases fit the budget.
    cases: 5_000,
    format: Format::JsonLines,
    dict: &[
        "\"id\":\"bd-a1\"",
        "\"id\":\"bd-a1.2\"",
        "\"title\":\"t\"",
        "\"parent\":\"bd-a1\"",
        "\"status\":\"tombstone\"",
        "\"dependencies\":[{\"depends_on_id\":\"bd-a1\",\"type\":\"parent-child\"}]",
        "\"pipeline\":{\"route\":\"leaf\",\"step\":\"deliver\"}",
        "\"../x\"",
        "\"priority\":1e400",
    ],
    seeds: no_seeds,
};

fn bd_import(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    // A byte-order mark is no part of the first line (the import reads past it).
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
    let change = match import::plan("f.jsonl", text, &Scan::default(), false) {
        Ok(c) => c,
        Err(e) => panic!("a plan on an empty store without --strict refused: {e}"),
    };
    let report = &change.output;
    assert_eq!(report.records, lines);
    assert_eq!(
        report.created.len() + report.problems.len(),
        lines,
        "{report:?}"
    );
    let total = text.lines().count().max(1);
    assert!(
        report
            .problems
            .iter()
            .all(|p| (1..=total).contains(&p.line))
    );
    for bead in &change.beads {
        assert!(splice::model::id::is_valid(&bead.id));
        assert!(!bead.is_node() && bead.pipeline.lease.is_none());
        let mut committed = bead.clone();
        committed.pipeline.seq = 1;
        committed.updated_at = "2099-01-01T00:00:00Z".into();
        // The first line that is a record of this id is the one imported.
        let line = text
            .lines()
            .find(|l| bd::parse_line(l, 0).is_ok_and(|r| r.bead.id == bead.id))
            .expect("the record is in the file");
        let mut original: Value = serde_json::from_str(line).expect("it parsed");
        let own = original.get("pipeline").is_some() || original.get("schema_version").is_some();
        if !own {
            // A record splice did not change exports as the line it was, byte for byte.
            assert_eq!(
                bd::to_line(&committed, false),
                line,
                "export of {}",
                bead.id
            );
        }
        let back: Value = serde_json::from_str(&bd::to_line(&committed, false)).expect("JSON");
        if let Some(map) = original.as_object_mut() {
            map.remove("pipeline");
            map.remove("schema_version");
        }
        assert_eq!(back, original, "export of {}", bead.id);
    }
    !change.beads.is_empty()
}

/// `bd-sync`: a first sync of any file into an empty store (`transition::sync::plan`) takes
/// every record it can, keeps every other line in the file as it was, and a second sync of what
/// it wrote, against the store it made and the base it recorded, writes nothing: no bead, no
/// byte of the file, no change of the base. The base reads back as it was written. Input: the
/// file.
pub const BD_SYNC: Target = Target {
    name: "bd-sync",
    run: bd_sync,
    corpus: "bd",
    cases: 2_000,
    format: Format::JsonLines,
    dict: &[
        "\"id\":\"bd-a1\"",
        "\"title\":\"t\"",
        "\"parent\":\"bd-a1\"",
        "\"status\":\"closed\"",
        "\"labels\":[\"provides:x\"]",
        "\"dependencies\":[{\"depends_on_id\":\"external:p:x\",\"type\":\"blocks\"}]",
        "\r\n",
        "\u{feff}",
    ],
    seeds: no_seeds,
};

fn bd_sync(data: &[u8]) -> bool {
    use splice::transition::sync::{self, Base, Input};
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let input = Input {
        file: "f.jsonl",
        text,
        base_file: "base",
        base: None,
        take: None,
    };
    // A parent cycle in the file refuses the whole sync, as it must.
    let Ok(first) = sync::plan(&input, &Scan::default()) else {
        return false;
    };
    let synced = first.output;
    assert!(
        synced.report.to_bd.is_empty() && synced.report.conflicts.is_empty(),
        "an empty store gives the file nothing: {:?}",
        synced.report
    );
    // As the writer leaves them: each at the seq its import recorded.
    let beads: Vec<_> = first
        .beads
        .into_iter()
        .map(|mut b| {
            b.pipeline.seq = 1;
            b
        })
        .collect();
    assert_eq!(beads.len(), synced.report.to_splice.len());
    let base = Base::parse(&synced.base.render(), std::path::Path::new("base"))
        .expect("the base reads back");
    assert_eq!(base, synced.base, "the base reads back as it was written");
    let scan = Scan {
        beads,
        unreadable: Vec::new(),
    };
    let again = Input {
        text: &synced.text,
        base: Some(base),
        ..input
    };
    let second = sync::plan(&again, &scan).expect("a second sync plans");
    assert!(
        second.beads.is_empty(),
        "a second sync writes beads: {:?}",
        second.output.report
    );
    assert_eq!(
        second.output.text, synced.text,
        "a second sync changes the file"
    );
    assert_eq!(
        second.output.base, synced.base,
        "a second sync changes the base"
    );
    true
}
