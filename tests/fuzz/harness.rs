//! The stable-toolchain fuzz driver: replay a target's corpus, then run seeded mutations of it
//! for a bounded budget. No coverage feedback (that is what the libFuzzer crate in `fuzz/` is
//! for); instead a mutated input the target accepted joins a small pool, so mutations build on
//! inputs that get past the parser, and JSON inputs are also mutated as JSON values.
//!
//! Deterministic: case `i` of a target is a function of the seed (`SPLICE_FUZZ_SEED`, default 0,
//! mixed with the target's name) and `i`, so a failure reproduces with the same seed. The budget
//! is `SPLICE_FUZZ_CASES` cases per target (default: the target's own), or with
//! `SPLICE_FUZZ_SECONDS` as many cases as fit in that many seconds per target.
//!
//! A panicking case (a crash or a broken property) fails the test naming the target, the seed,
//! the case and where its input was saved; a case still running after `SPLICE_FUZZ_HANG_SECONDS`
//! (default 60) is a hang: the input is saved and the process aborts.

use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::mutate::{Pool, Rng, fnv, generate};
use crate::targets::{Target, corpus_dir, files_in};

/// What one target's run did.
#[derive(Debug)]
pub struct Report {
    pub corpus: usize,
    pub cases: u64,
    pub accepted: u64,
    pub elapsed: Duration,
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number")),
    )
}

/// Where a failing input is saved.
fn save_failure(name: &str, input: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("fuzz-failures")
        .join(name);
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{:016x}", fnv(input)));
    let _ = std::fs::write(&path, input);
    path
}

fn escaped(input: &[u8]) -> String {
    let shown = &input[..input.len().min(1500)];
    let mut s: String = shown.escape_ascii().to_string();
    if input.len() > shown.len() {
        s.push_str(&format!("… ({} bytes in all)", input.len()));
    }
    s
}

/// Aborts the process when one case runs past the hang limit, saving its input first.
struct Watchdog {
    started: Arc<AtomicU64>,
    input: Arc<Mutex<Vec<u8>>>,
    done: Arc<AtomicBool>,
}

impl Watchdog {
    fn start(name: &'static str, epoch: Instant) -> Watchdog {
        let limit = env_u64("SPLICE_FUZZ_HANG_SECONDS").unwrap_or(60) * 1000;
        let w = Watchdog {
            started: Arc::new(AtomicU64::new(u64::MAX)),
            input: Arc::default(),
            done: Arc::default(),
        };
        let (started, input, done) = (w.started.clone(), w.input.clone(), w.done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let at = started.load(Ordering::Relaxed);
                let now = epoch.elapsed().as_millis() as u64;
                if at != u64::MAX && now.saturating_sub(at) > limit {
                    let bytes = input.lock().map(|i| i.clone()).unwrap_or_default();
                    let path = save_failure(name, &bytes);
                    eprintln!(
                        "fuzz target {name}: one case ran over {}s (a hang); input saved to {}: {}",
                        limit / 1000,
                        path.display(),
                        escaped(&bytes)
                    );
                    std::process::abort();
                }
            }
        });
        w
    }

    fn enter(&self, epoch: Instant, input: &[u8]) {
        if let Ok(mut i) = self.input.lock() {
            i.clear();
            i.extend_from_slice(input);
        }
        self.started
            .store(epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn leave(&self) {
        self.started.store(u64::MAX, Ordering::Relaxed);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// Run one case, turning a panic into a failure that names the input.
fn one(t: &Target, what: &dyn Fn() -> String, input: &[u8]) -> bool {
    match catch_unwind(AssertUnwindSafe(|| (t.run)(input))) {
        Ok(accepted) => accepted,
        Err(e) => {
            let msg: Cow<str> = e
                .downcast_ref::<String>()
                .map(|s| Cow::Borrowed(s.as_str()))
                .or_else(|| e.downcast_ref::<&str>().map(|s| Cow::Borrowed(*s)))
                .unwrap_or(Cow::Borrowed("(no message)"));
            let path = save_failure(t.name, input);
            panic!(
                "fuzz target {} failed on {}: {msg}\ninput saved to {}\ninput: {}",
                t.name,
                what(),
                path.display(),
                escaped(input)
            );
        }
    }
}

/// Replay the corpus, then run the budget of generated cases.
pub fn run(t: &Target) -> Report {
    let epoch = Instant::now();
    let mut seeds = files_in(&corpus_dir(t.corpus), |_| true);
    seeds.extend((t.seeds)());
    assert!(
        !seeds.is_empty(),
        "fuzz target {}: no corpus in {}",
        t.name,
        corpus_dir(t.corpus).display()
    );
    let watchdog = Watchdog::start(t.name, epoch);
    let mut accepted = 0;
    for (name, bytes) in &seeds {
        watchdog.enter(epoch, bytes);
        accepted += u64::from(one(t, &|| format!("corpus file {name}"), bytes));
        watchdog.leave();
    }
    let pool = Pool::from_seeds(&seeds);
    let mut bases: Vec<Vec<u8>> = seeds.into_iter().map(|(_, b)| b).collect();
    let corpus = bases.len();
    let base_seed = env_u64("SPLICE_FUZZ_SEED").unwrap_or(0);
    let seed = base_seed ^ fnv(t.name.as_bytes());
    let seconds = env_u64("SPLICE_FUZZ_SECONDS");
    let cases =
        env_u64("SPLICE_FUZZ_CASES").unwrap_or(if seconds.is_some() { u64::MAX } else { t.cases });
    let deadline = seconds.map(|s| epoch + Duration::from_secs(s));
    let mut rng = Rng::new(seed);
    let mut ran = 0;
    while ran < cases && deadline.is_none_or(|d| Instant::now() < d) {
        let input = generate(&mut rng, &bases, t, &pool);
        watchdog.enter(epoch, &input);
        let what = || format!("generated case {ran} (SPLICE_FUZZ_SEED={base_seed})");
        if one(t, &what, &input) {
            accepted += 1;
            // Accepted inputs seed later cases: up to 256 of them, the oldest replaced.
            if bases.len() < corpus + 256 {
                bases.push(input);
            } else {
                let i = corpus + rng.below(256);
                bases[i] = input;
            }
        }
        watchdog.leave();
        ran += 1;
    }
    let report = Report {
        corpus,
        cases: ran,
        accepted,
        elapsed: epoch.elapsed(),
    };
    eprintln!(
        "fuzz {:<18} corpus {:>3}, generated {:>6} cases, {:>5} accepted, {:>6} ms",
        t.name,
        report.corpus,
        report.cases,
        report.accepted,
        report.elapsed.as_millis()
    );
    report
}
