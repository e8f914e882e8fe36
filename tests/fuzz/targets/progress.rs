//! An agent's dispatch log read while it runs (`exec::progress`): its lines in words, a
//! [`Tail`] following it, and the latest words of it.

use splice::exec::progress::{Tail, WORDS_CAP, latest, words};

use super::{Format, Target, no_seeds, scratch};

thread_local! {
    static FILES: tempfile::TempDir = scratch();
}

/// `progress`: words are one line of at most `WORDS_CAP` characters with no control
/// characters, the same twice; a [`Tail`] polled while the log grows in two pieces returns
/// exactly its complete lines, whatever the split (inside a line or a UTF-8 character);
/// [`latest`] is the words of the last line that has some. Input: the log.
pub const PROGRESS: Target = Target {
    name: "progress",
    run: progress_target,
    corpus: "progress",
    // Each case writes a file twice: fewer cases fit the budget.
    cases: 5_000,
    format: Format::JsonLines,
    dict: &[
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"name\":\"Bash\",\"input\":{\"command\":\"x\"}}]}}",
        "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"is_error\":true,\"content\":[]}]}}",
        "{\"type\":\"result\",\"num_turns\":1}",
        "\u{1b}[31m",
        "/.splice/worktrees/",
        "\r\n",
        "\n",
    ],
    seeds: no_seeds,
};

fn progress_target(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let mut said = None;
    for line in text.lines() {
        let w = words(line);
        assert_eq!(w, words(line), "not the same twice");
        if let Some(w) = &w {
            assert!(!w.is_empty() && w.chars().count() <= WORDS_CAP, "{w:?}");
            assert!(!w.chars().any(char::is_control), "{w:?}");
            said = Some(w.clone());
        }
    }
    FILES.with(|dir| {
        let path = dir.path().join("dispatch.log");
        let split = data.len() / 2 + data.first().map_or(0, |b| usize::from(*b) % 7);
        let (a, b) = data.split_at(split.min(data.len()));
        std::fs::write(&path, a).expect("write");
        let mut tail = Tail::new(&path);
        let mut lines = tail.poll();
        std::fs::write(&path, data).expect("write");
        lines.extend(tail.poll());
        let complete = &data[..data.iter().rposition(|c| *c == b'\n').map_or(0, |i| i + 1)];
        let want: Vec<String> = complete
            .split(|c| *c == b'\n')
            .take(complete.iter().filter(|c| **c == b'\n').count())
            .map(|l| {
                let l = String::from_utf8_lossy(l);
                l.strip_suffix('\r').unwrap_or(&l).to_string()
            })
            .collect();
        // Within one poll's read and `latest`'s window, as fuzz inputs are.
        if data.len() <= 64 * 1024 {
            assert_eq!(lines, want, "split at {split}; second piece {}", b.len());
            assert_eq!(latest(&path), said, "latest");
        }
    });
    said.is_some()
}
