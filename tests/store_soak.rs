//! The crash soak: concurrent writers (processes of the built binary doing random writing verbs
//! on a few beads), random `kill -9`s and random `SPLICE_FAILPOINT`s, then the invariants:
//! every acknowledged transition (exit 0) is committed in the journal; each bead's seq goes up by
//! one per committed record; every record is committed (none voided); every bead file parses and
//! is its last committed after-image; no temp file or holder record is left after a final write;
//! and writes still work.
//!
//! Off unless `SPLICE_SOAK` is set (so `cargo test` stays quick): `SPLICE_SOAK=60` runs until 60
//! kill events (CI, `.ci/run`), `SPLICE_SOAK=600s` runs ten minutes. `scripts/soak.sh` runs it and
//! prints the figures; `SPLICE_SOAK_SEED` replays a seed.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::Repo;
use serde_json::Value;

const WRITERS: u64 = 4;
const BEADS: usize = 3;
const FAILPOINTS: [&str; 3] = ["after-journal", "after-tmp", "after-rename"];
/// A count-bounded soak that has not reached its count by then fails (CI must stay quick).
const COUNT_CAP: Duration = Duration::from_secs(90);

#[derive(Clone, Copy, Debug)]
enum Until {
    Kills(u64),
    Elapsed(Duration),
}

/// One acknowledged transition: the verb exited 0 on `bead`, and its record carries `tag`.
#[derive(Debug)]
struct Ack {
    verb: &'static str,
    bead: String,
    tag: String,
}

#[derive(Default, Debug)]
struct Tally {
    acks: Vec<Ack>,
    invocations: u64,
    kills: u64,
    aborts: u64,
    refusals: u64,
    /// Verbs that ran and had nothing to change (clearing an unclaimed bead): no record.
    noops: u64,
    rolled_forward: u64,
    faults: Vec<String>,
}

/// xorshift64*: enough randomness for a soak, and a seed replays it.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn until() -> Option<Until> {
    let spec = std::env::var("SPLICE_SOAK")
        .ok()
        .filter(|s| !s.is_empty())?;
    Some(match spec.strip_suffix('s') {
        Some(secs) => Until::Elapsed(Duration::from_secs(secs.parse().expect("SPLICE_SOAK=Ns"))),
        None => Until::Kills(spec.parse().expect("SPLICE_SOAK=N (kill events) or Ns")),
    })
}

/// A random writing verb on a random bead; each carries a unique tag its record will hold.
/// Returns the journal's name of the verb, the bead and the arguments.
fn pick(rng: &mut Rng, beads: &[String], tag: &str) -> (&'static str, String, Vec<String>) {
    let bead = beads[rng.below(beads.len() as u64) as usize].clone();
    let (verb, journaled, extra): (&str, &'static str, Vec<&str>) = match rng.below(5) {
        0 => ("park", "park", vec!["--reason", tag]),
        1 => ("unpark", "unpark", vec!["--reason", tag]),
        2 => ("set-target", "set-target", vec!["--target", tag]),
        3 => ("claim", "claim", vec!["--holder", tag]),
        _ => ("release", "release-clear", vec!["--clear", "--reason", tag]),
    };
    let mut args: Vec<String> = ["transition", verb, "--bead", &bead]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    (journaled, bead, args)
}

/// Create the branch `name` at the repository's HEAD (in-process: writers run concurrently).
fn branch(r: &Repo, name: &str) {
    let repo = git2::Repository::open(r.path()).unwrap();
    let head = repo.head().unwrap().peel_to_commit().unwrap();
    repo.branch(name, &head, false).unwrap();
}

/// One writer: invoke, sometimes kill -9 at a random moment or set a failpoint, tally.
fn writer(
    r: &Repo,
    beads: &[String],
    w: u64,
    seed: u64,
    stop: &AtomicBool,
    kills: &AtomicU64,
) -> Tally {
    let mut rng = Rng(seed ^ (w + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut tally = Tally::default();
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let tag = format!("s{w}n{n}e");
        let (verb, bead, args) = pick(&mut rng, beads, &tag);
        if verb == "set-target" {
            // A target must name a commit: give the tag a branch of its own.
            branch(r, &tag);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cmd = r.cmd(&args);
        let plan = rng.below(100);
        if (30..45).contains(&plan) {
            cmd.env("SPLICE_FAILPOINT", FAILPOINTS[rng.below(3) as usize]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if plan < 30 {
            std::thread::sleep(Duration::from_micros(rng.below(15_000)));
            if child.try_wait().unwrap().is_none() && child.kill().is_ok() {
                tally.kills += 1;
                kills.fetch_add(1, Ordering::SeqCst);
            }
        }
        let out = child.wait_with_output().unwrap();
        tally.invocations += 1;
        let stderr = String::from_utf8_lossy(&out.stderr);
        tally.rolled_forward += stderr.matches("rolled forward").count() as u64;
        if stderr.contains("not applied") || stderr.contains("panicked") {
            tally.faults.push(format!("{args:?}: {stderr}"));
        }
        match out.status.code() {
            Some(0) if changed_nothing(&out.stdout) => tally.noops += 1,
            Some(0) => tally.acks.push(Ack { verb, bead, tag }),
            Some(1) => tally.refusals += 1,
            None if stderr.contains("failpoint") => tally.aborts += 1,
            None => {} // killed
            Some(code) => tally
                .faults
                .push(format!("{args:?} exited {code}: {stderr}")),
        }
    }
    tally
}

fn drive(r: &Repo, beads: &[String], until: Until, seed: u64) -> Tally {
    let stop = AtomicBool::new(false);
    let kills = AtomicU64::new(0);
    let started = Instant::now();
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (stop, kills) = (&stop, &kills);
                s.spawn(move || writer(r, beads, w, seed, stop, kills))
            })
            .collect();
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let done = match until {
                Until::Kills(n) => {
                    kills.load(Ordering::SeqCst) >= n || started.elapsed() > COUNT_CAP
                }
                Until::Elapsed(d) => started.elapsed() >= d,
            };
            if done {
                stop.store(true, Ordering::SeqCst);
                break;
            }
        }
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = Tally::default();
    for t in tallies {
        all.acks.extend(t.acks);
        all.faults.extend(t.faults);
        all.invocations += t.invocations;
        all.kills += t.kills;
        all.aborts += t.aborts;
        all.refusals += t.refusals;
        all.noops += t.noops;
        all.rolled_forward += t.rolled_forward;
    }
    all
}

/// Did an acknowledged verb report that it changed nothing (`release --clear` on an unclaimed
/// bead answers `"cleared": null`, and writes no record)?
fn changed_nothing(stdout: &[u8]) -> bool {
    serde_json::from_slice::<Value>(stdout).is_ok_and(|v| v.get("cleared") == Some(&Value::Null))
}

/// The journal's committed records, checking that every record is followed by its own marker
/// and that no line is anything else.
fn committed(r: &Repo) -> Vec<Value> {
    let mut out = Vec::new();
    let mut pending: Option<Value> = None;
    for (i, line) in r.journal().lines().enumerate() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("line {i}: {e}"));
        if v.get("tx").is_some() {
            assert!(
                pending.is_none(),
                "line {i}: a record before the last one's marker"
            );
            pending = Some(v);
        } else if let Some(tx) = v.get("commit") {
            let record = pending
                .take()
                .unwrap_or_else(|| panic!("line {i}: marker, no record"));
            assert_eq!(&record["tx"], tx, "line {i}: the marker of another record");
            out.push(record);
        } else {
            panic!("line {i}: neither record nor marker (a voided record?): {line}");
        }
    }
    assert!(pending.is_none(), "the last record is committed");
    out
}

/// Each record with `beads` holding every image it wrote: its whole images, and its patches
/// applied to the image before (a record holds a patch for a bead that had a file).
fn with_images(records: Vec<Value>) -> Vec<Value> {
    let mut images: BTreeMap<String, splice::model::Bead> = BTreeMap::new();
    records
        .into_iter()
        .map(|mut v| {
            let record: splice::store::journal::Record =
                serde_json::from_value(v.clone()).expect("a committed record parses");
            let mut written = Vec::new();
            for p in &record.patches {
                let base = images
                    .get(&p.id)
                    .unwrap_or_else(|| panic!("a patch of {} before its first image", p.id));
                let after = p
                    .apply(base, &record.at)
                    .unwrap_or_else(|e| panic!("record {}: {e}", record.id));
                images.insert(p.id.clone(), after.clone());
                written.push(after);
            }
            for b in record.beads {
                images.insert(b.id.to_string(), b.clone());
                written.push(b);
            }
            v["beads"] = serde_json::to_value(&written).unwrap();
            v
        })
        .collect()
}

/// Check every invariant; returns the number of committed transitions.
fn check(r: &Repo, beads: &[String], acks: &[Ack]) -> usize {
    let records = with_images(committed(r));
    let mut last: BTreeMap<String, Value> = BTreeMap::new();
    for record in &records {
        for image in record["beads"].as_array().unwrap() {
            let id = image["id"].as_str().unwrap().to_string();
            let seq = image["pipeline"]["seq"].as_u64().unwrap();
            let before = last
                .get(&id)
                .map_or(0, |b| b["pipeline"]["seq"].as_u64().unwrap());
            assert_eq!(seq, before + 1, "bead {id}: seq {before} then {seq}");
            last.insert(id, image.clone());
        }
    }
    for ack in acks {
        let found = records.iter().any(|rec| {
            rec["verb"] == ack.verb
                && rec["beads"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|b| b["id"] == ack.bead.as_str())
                && rec.to_string().contains(&ack.tag)
        });
        assert!(found, "acknowledged but not committed: {ack:?}");
    }
    for id in beads {
        let path = r.state().join("beads").join(format!("{id}.json"));
        let text = std::fs::read(&path).unwrap();
        serde_json::from_slice::<splice::model::Bead>(&text).expect("the bead file parses");
        let file: Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(
            Some(&file),
            last.get(id),
            "bead {id} is its last committed image"
        );
    }
    for dir in [r.state(), r.state().join("beads")] {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            assert!(
                !name.ends_with(".tmp") && name != "lock.holder",
                "left behind: {name}"
            );
        }
    }
    records.len()
}

#[test]
fn crash_soak() {
    let Some(until) = until() else {
        return;
    };
    let seed = std::env::var("SPLICE_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.map_or(7, |d| d.as_nanos() as u64) ^ u64::from(std::process::id())
        });
    let r = Repo::new();
    let beads: Vec<String> = (0..BEADS)
        .map(|i| r.task(&format!("bead {i}"), &[]))
        .collect();
    let started = Instant::now();
    let tally = drive(&r, &beads, until, seed);
    assert!(tally.faults.is_empty(), "seed {seed}: {:#?}", tally.faults);
    if let Until::Kills(n) = until {
        assert!(
            tally.kills >= n,
            "seed {seed}: only {} kill events in {COUNT_CAP:?}",
            tally.kills
        );
    }
    // A final write on every bead: recovers whatever the last kill left, and must work.
    for (i, id) in beads.iter().enumerate() {
        branch(&r, &format!("final{i}"));
        r.ok(&[
            "transition",
            "set-target",
            "--bead",
            id,
            "--target",
            &format!("final{i}"),
        ]);
    }
    let transitions = check(&r, &beads, &tally.acks);
    let _ = writeln!(
        std::io::stderr(),
        "soak (seed {seed}): {} kill events (kill -9), {} failpoint aborts, {} invocations, {} \
         acknowledged and checked, {} refused, {} no-ops, {} roll-forwards seen, {transitions} \
         committed transitions checked, in {:.1} s",
        tally.kills,
        tally.aborts,
        tally.invocations,
        tally.acks.len(),
        tally.refusals,
        tally.noops,
        tally.rolled_forward,
        started.elapsed().as_secs_f64()
    );
}
