//! `splice decide --snapshot FILE`: replay a saved snapshot through the pure core.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::decide::decide;
use crate::error::{Error, Result};
use crate::model::Snapshot;

use super::Global;

/// Print the decision for a saved snapshot; identical output every run.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The snapshot JSON (`-` for stdin), as `splice snapshot` prints it.
    #[arg(long, value_name = "FILE")]
    pub snapshot: PathBuf,
    /// Compare with this expected decision instead of printing: exit 1 with a line diff if it
    /// differs.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    #[command(flatten)]
    pub json: super::args::JsonAlias,
}

pub fn run(_global: &Global, args: Args) -> Result<i32> {
    let snapshot = read_snapshot(&args.snapshot)?;
    let actual = decide(&snapshot).to_pretty_json();
    print_or_expect(
        "the decision",
        &args.snapshot,
        args.expect.as_deref(),
        &actual,
    )
}

/// Read and parse a snapshot file, or stdin for `-`.
pub fn read_snapshot(path: &Path) -> Result<Snapshot> {
    let (text, name) = read_input(path)?;
    serde_json::from_str(&text)
        .map_err(|e| Error::bad_file(&name, format!("not a splice snapshot: {e}")))
}

/// A replay command's input: the file's text, or stdin's for `-`, and the name to give it in
/// errors (`decide --snapshot`, `monitor --trajectory`).
pub fn read_input(path: &Path) -> Result<(String, PathBuf)> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Error::io("<stdin>", e))?;
        return Ok((text, PathBuf::from("<stdin>")));
    }
    let text = crate::safe_read::read_text(path, crate::safe_read::INPUT)?;
    Ok((text, path.to_path_buf()))
}

/// A replay command's answer: print `actual`, or with `--expect` compare it and exit 1 with a
/// line diff when `what` (for `input`) differs.
pub fn print_or_expect(
    what: &str,
    input: &Path,
    expect: Option<&Path>,
    actual: &str,
) -> Result<i32> {
    let Some(expect) = expect else {
        let mut out = super::output::stdout();
        out.write_all(actual.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| Error::io("<stdout>", e))?;
        return Ok(0);
    };
    let expected = crate::safe_read::read_text(expect, crate::safe_read::INPUT)?;
    if expected == actual {
        return Ok(0);
    }
    super::output::err(&format!(
        "splice: {what} for {} differs from {} (- expected, + actual):\n{}",
        input.display(),
        expect.display(),
        super::output::printable_message(&line_diff(&expected, actual))
    ));
    Ok(1)
}

/// The differing middle of two texts, after their common first and last lines, with line
/// numbers: enough to read a decision change at a glance without a diff library.
pub fn line_diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let mut out = String::new();
    let context = head.saturating_sub(3);
    for (i, line) in a.iter().enumerate().take(head).skip(context) {
        out.push_str(&format!("  {:>5} {line}\n", i + 1));
    }
    for (i, line) in a[head..a.len() - tail].iter().enumerate() {
        out.push_str(&format!("- {:>5} {line}\n", head + i + 1));
    }
    for (i, line) in b[head..b.len() - tail].iter().enumerate() {
        out.push_str(&format!("+ {:>5} {line}\n", head + i + 1));
    }
    for (i, line) in b.iter().enumerate().skip(b.len() - tail).take(3) {
        out.push_str(&format!("  {:>5} {line}\n", i + 1));
    }
    if out.is_empty() {
        out.push_str("  (the texts differ only in line endings or a final newline)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::line_diff;

    #[test]
    fn diff_shows_only_the_changed_middle() {
        let d = line_diff("a\nb\nc\n", "a\nx\nc\n");
        assert!(d.contains("-     2 b"));
        assert!(d.contains("+     2 x"));
        assert!(d.contains("      1 a"));
    }
}
