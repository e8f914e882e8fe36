//! Many processes against one store: the lock makes every transition all-or-nothing and ordered.

mod common;

use std::process::{Child, Stdio};

use common::Repo;
use serde_json::Value;

fn spawn(r: &Repo, args: &[&str]) -> Child {
    r.cmd(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("splice starts")
}

#[test]
fn sixteen_processes_race_one_claim_and_exactly_one_wins() {
    let r = Repo::new();
    for round in 0..50 {
        let id = r.task(&format!("round {round}"), &[]);
        let children: Vec<Child> = (0..16)
            .map(|p| {
                spawn(
                    &r,
                    &[
                        "transition",
                        "claim",
                        "--bead",
                        &id,
                        "--holder",
                        &format!("runner-{p}"),
                    ],
                )
            })
            .collect();
        let mut winners = Vec::new();
        let mut refusals = Vec::new();
        for (p, child) in children.into_iter().enumerate() {
            let out = child.wait_with_output().unwrap();
            common::no_panic(&out);
            match out.status.code() {
                Some(0) => winners.push(p),
                Some(1) => refusals.push((p, String::from_utf8_lossy(&out.stderr).into_owned())),
                other => panic!(
                    "round {round}: runner-{p} exited {other:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        for (p, err) in &refusals {
            assert!(
                err.contains(&format!(
                    "bead {id} is claimed by runner-{} since",
                    winners[0]
                )),
                "round {round}: runner-{p} lost, and should be told to whom: {err}"
            );
        }
        let lease = &r.bead(&id)["pipeline"]["lease"];
        assert_eq!(lease["holder"], format!("runner-{}", winners[0]));
    }
}

#[test]
fn eight_writers_times_two_hundred_transitions_all_land() {
    let r = Repo::new();
    let ids: Vec<String> = (0..8)
        .map(|w| r.task(&format!("writer {w}"), &[]))
        .collect();
    let workers: Vec<std::thread::JoinHandle<()>> = ids
        .iter()
        .enumerate()
        .map(|(w, id)| {
            let id = id.clone();
            let dir = r.path().to_path_buf();
            std::thread::spawn(move || {
                let holder = format!("w{w}");
                for i in 0..200 {
                    // Alternate claim and release: 200 transitions, each changing the bead.
                    let verb = if i % 2 == 0 { "claim" } else { "release" };
                    let out = common::hermetic_splice(&mut std::process::Command::new(env!(
                        "CARGO_BIN_EXE_splice"
                    )))
                    .args(["transition", verb, "--bead", &id, "--holder", &holder])
                    .current_dir(&dir)
                    .env("SPLICE_NOW", common::NOW)
                    .output()
                    .unwrap();
                    assert_eq!(
                        out.status.code(),
                        Some(0),
                        "{verb} {i}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("writer thread");
    }
    // Every bead went through its 200 transitions: seq counts them (1 for init-task).
    for id in &ids {
        assert_eq!(r.bead(id)["pipeline"]["seq"], 201, "{id}");
    }
    // The journal holds all 1,600 committed records, each followed by its marker.
    let lines: Vec<Value> = r
        .journal()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let records: Vec<&Value> = lines.iter().filter(|v| v.get("verb").is_some()).collect();
    let markers = lines.iter().filter(|v| v.get("commit").is_some()).count();
    let transitions = records.iter().filter(|v| v["verb"] != "init-task").count();
    assert_eq!(transitions, 1600);
    assert_eq!(markers, records.len());
    for pair in lines.chunks(2) {
        assert_eq!(
            pair[0]["tx"], pair[1]["commit"],
            "each record is followed by its own marker"
        );
    }
}
