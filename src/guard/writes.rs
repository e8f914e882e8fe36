//! The commands that write files, and where they write: redirection aside, each program's
//! own way of naming what it changes (`rm` its operands, `cp` its last one or `-t DIR`,
//! `sed -i` its files, `dd of=`, …; `find` is [`super::find`]). And the wrappers that run
//! another command (`env`, `sudo`, `timeout`, `xargs`, `eval`, `su -c`, …).

use super::bash::{Arg, Walk, describe, file_name};

/// What a wrapper runs.
pub(super) enum Unwrapped {
    /// It runs these words as a command.
    Runs(Vec<Arg>),
    /// It runs this script.
    Script(String),
    /// It runs nothing the guard cares about (`command -v x`).
    Nothing,
    /// Not a wrapper.
    Itself,
}

/// Skip options (words starting with `-`); `with_value` ones take the next word. Returns the
/// index of the first operand.
fn skip_opts(args: &[Arg], with_value: &[&str]) -> usize {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text();
        if t == "--" {
            return i + 1;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        i += if with_value.contains(&t) { 2 } else { 1 };
    }
    i
}

/// The operands of a command: words that are not options or option values.
fn operands<'a>(args: &'a [Arg], with_value: &[&str]) -> Vec<&'a Arg> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut opts = true;
    while let Some(a) = args.get(i) {
        let t = a.text();
        i += 1;
        if opts && t == "--" {
            opts = false;
        } else if opts && t.starts_with('-') && t != "-" {
            if with_value.contains(&t) {
                i += 1;
            }
        } else {
            out.push(a);
        }
    }
    out
}

/// The value of `-t DIR`, `--target-directory DIR` or `--target-directory=DIR`.
fn option_value(args: &[Arg], short: &str, long: &str) -> Option<Arg> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let t = a.text();
        if t == short || t == long {
            return it.next().cloned();
        }
        if let Some(v) = t.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
            return Some(Arg::lit(v));
        }
    }
    None
}

pub(super) fn unwrap(prog: &str, rest: &[Arg], w: &mut Walk, prev: &[Vec<Arg>]) -> Unwrapped {
    let from = |i: usize| Unwrapped::Runs(rest.get(i..).unwrap_or_default().to_vec());
    match prog {
        "env" => env(rest, w),
        "sudo" | "doas" => {
            let i = skip_opts(
                rest,
                &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"],
            );
            from(i)
        }
        "nice" => from(skip_opts(rest, &["-n", "--adjustment"])),
        "ionice" => from(skip_opts(rest, &["-c", "-n", "-p", "-t"])),
        "time" => from(skip_opts(rest, &["-f", "-o", "--format", "--output"])),
        "nohup" | "builtin" | "setsid" | "unbuffer" | "stdbuf" | "caffeinate" => {
            from(skip_opts(rest, &[]))
        }
        "timeout" => from(skip_opts(rest, &["-s", "-k", "--signal", "--kill-after"]) + 1),
        "exec" => from(skip_opts(rest, &["-a"])),
        "command" => match rest.first().map(Arg::text) {
            Some("-v" | "-V") => Unwrapped::Nothing,
            _ => from(skip_opts(rest, &[])),
        },
        "xargs" => xargs(rest, prev),
        "eval" => Unwrapped::Script(describe(rest)),
        "su" => {
            let script = option_value(rest, "-c", "--command");
            script.map_or(Unwrapped::Nothing, |s| Unwrapped::Script(s.text().into()))
        }
        _ => Unwrapped::Itself,
    }
}

/// `env [-i] [-u X] [-C DIR] [-S STR] [X=y]… cmd`.
fn env(rest: &[Arg], w: &mut Walk) -> Unwrapped {
    let mut i = 0;
    while let Some(a) = rest.get(i) {
        let t = a.text();
        if t == "-S" || t == "--split-string" {
            let s = rest.get(i + 1).map(Arg::text).unwrap_or("");
            let tail = describe(rest.get(i + 2..).unwrap_or_default());
            return Unwrapped::Script(format!("{s} {tail}"));
        }
        if t == "-C" || t == "--chdir" {
            if let Some(d) = rest.get(i + 1) {
                w.cwd = w.resolve(d.text());
            }
            i += 2;
        } else if matches!(t, "-u" | "--unset") {
            i += 2;
        } else if let Some((name, value)) = t.split_once('=').filter(|_| !t.starts_with('-')) {
            w.assignment(name, &Arg::lit(value));
            i += 1;
        } else if t.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    Unwrapped::Runs(rest.get(i..).unwrap_or_default().to_vec())
}

/// `xargs [opts] cmd args`: the command, with the words of the pipeline before it as operands
/// (what it feeds xargs is the best guess at what xargs passes on).
fn xargs(rest: &[Arg], prev: &[Vec<Arg>]) -> Unwrapped {
    let with_value = [
        "-a",
        "-d",
        "-E",
        "-I",
        "-L",
        "-n",
        "-P",
        "-s",
        "--arg-file",
        "--delimiter",
        "--max-args",
        "--max-lines",
        "--max-procs",
        "--max-chars",
        "--replace",
    ];
    let i = skip_opts(rest, &with_value);
    let mut cmd: Vec<Arg> = rest.get(i..).unwrap_or_default().to_vec();
    if cmd.is_empty() {
        return Unwrapped::Nothing;
    }
    for p in prev {
        cmd.extend(
            p.iter()
                .skip(1)
                .filter(|a| !a.text().starts_with('-'))
                .cloned(),
        );
    }
    Unwrapped::Runs(cmd)
}

/// Judge a command that is neither a wrapper, a shell, git nor splice.
pub(super) fn judge(w: &mut Walk, prog: &str, args: &[Arg]) {
    let what = describe(args);
    let rest = &args[1..];
    let each = |w: &mut Walk, list: Vec<&Arg>, remove: bool| {
        for a in list {
            w.write(a, &what, remove);
        }
    };
    match prog {
        "tee" => each(w, operands(rest, &[]), false),
        "rm" | "rmdir" | "unlink" | "shred" | "srm" | "trash" | "trash-put" => {
            each(w, operands(rest, &[]), true)
        }
        "mv" | "cp" | "install" | "rsync" | "scp" | "ln" => copies(w, prog, rest, &what),
        "sed" => sed(w, rest, &what),
        "perl" => perl(w, rest, &what),
        "truncate" => each(
            w,
            operands(rest, &["-s", "-r", "--size", "--reference"]),
            false,
        ),
        "touch" => each(
            w,
            operands(rest, &["-d", "-t", "-r", "--date", "--reference"]),
            false,
        ),
        "mkdir" | "mkfifo" | "mknod" => {
            each(w, operands(rest, &["-m", "--mode", "--context"]), false)
        }
        "export" | "declare" | "typeset" | "local" | "readonly" => {
            for a in rest {
                if let Some((name, value)) = a.text().split_once('=') {
                    w.set_var(name, &Arg::lit(value));
                }
            }
        }
        "chmod" | "chown" | "chgrp" => {
            let ops = operands(rest, &[]);
            let skip = usize::from(!rest.iter().any(|a| a.text().starts_with("--reference")));
            each(w, ops.into_iter().skip(skip).collect(), true);
        }
        "find" => super::find::judge(w, rest, &what),
        _ => downloads(w, prog, rest, &what),
    }
}

/// `mv`, `cp`, `install`, `rsync`, `scp`, `ln`: what they create or replace (and, for `mv`,
/// what they take away).
fn copies(w: &mut Walk, prog: &str, rest: &[Arg], what: &str) {
    let with_value: &[&str] = match prog {
        "rsync" => &[
            "-e",
            "-f",
            "--rsh",
            "--filter",
            "--exclude",
            "--include",
            "-T",
        ],
        "install" => &[
            "-t", "-S", "--suffix", "-m", "-o", "-g", "--mode", "--owner",
        ],
        "scp" => &["-P", "-i", "-o", "-F", "-c", "-l", "-J", "-S"],
        _ => &["-t", "-S", "--suffix"],
    };
    let ops = operands(rest, with_value);
    match prog {
        "mv" => {
            for a in &ops {
                w.write(a, what, true);
            }
            copy_like(w, rest, &ops, what, true);
        }
        "install" if rest.iter().any(|a| a.text() == "-d") => {
            for a in &ops {
                w.write(a, what, false);
            }
        }
        "ln" if ops.len() == 1 && option_value(rest, "-t", "--target-directory").is_none() => {
            let name = file_name(ops[0].text()).unwrap_or("").to_string();
            w.write(&Arg::lit(&name), what, false);
        }
        _ => copy_like(w, rest, &ops, what, prog == "rsync"),
    }
}

/// `dd of=`, `curl -o`, `wget -O`, `tar -C`, `unzip -d`: the file or directory they write.
fn downloads(w: &mut Walk, prog: &str, rest: &[Arg], what: &str) {
    let target = match prog {
        "dd" => rest
            .iter()
            .find_map(|a| a.text().strip_prefix("of=").map(Arg::lit)),
        "curl" => option_value(rest, "-o", "--output"),
        "wget" => option_value(rest, "-O", "--output-document"),
        "tar" => option_value(rest, "-C", "--directory"),
        "unzip" => option_value(rest, "-d", "-d"),
        _ => None,
    };
    if let Some(t) = target {
        w.write(&t, what, false);
    }
}

/// `cp`/`mv`/`ln`/`install`/`rsync`: the destination (`-t DIR` or the last operand), and when it
/// is a directory, each source's name inside it.
fn copy_like(w: &mut Walk, rest: &[Arg], ops: &[&Arg], what: &str, remove: bool) {
    let (dest, sources): (Arg, &[&Arg]) = match option_value(rest, "-t", "--target-directory") {
        Some(d) => (d, ops),
        None if ops.len() >= 2 => (ops[ops.len() - 1].clone(), &ops[..ops.len() - 1]),
        None => return,
    };
    if dest.text().contains(':') && !dest.text().starts_with('/') {
        return; // host:path
    }
    w.write(&dest, what, remove);
    if let Some(d) = dest.known()
        && w.resolve(d).is_dir()
    {
        for s in sources {
            if let Some(name) = file_name(s.text()) {
                let inside = format!("{}/{name}", d.trim_end_matches('/'));
                w.write(&Arg::lit(&inside), what, remove);
            }
        }
    }
}

/// `sed -i` / `--in-place`: its files (the first operand is the script unless `-e`/`-f` gave it).
fn sed(w: &mut Walk, rest: &[Arg], what: &str) {
    let mut in_place = false;
    let mut script_given = false;
    let mut files = Vec::new();
    let mut i = 0;
    while let Some(a) = rest.get(i) {
        let t = a.text();
        i += 1;
        if t.starts_with("--in-place") {
            in_place = true;
        } else if t == "--expression" || t == "--file" {
            script_given = true;
            i += 1;
        } else if t.starts_with("--expression=") || t.starts_with("--file=") {
            script_given = true;
        } else if t.starts_with("--") {
        } else if let Some(cluster) = t.strip_prefix('-').filter(|c| !c.is_empty()) {
            for c in cluster.chars() {
                match c {
                    'i' => {
                        in_place = true;
                        break;
                    }
                    'e' | 'f' => {
                        script_given = true;
                        if cluster.ends_with(c) {
                            i += 1;
                        }
                        break;
                    }
                    'l' => {
                        i += usize::from(cluster.ends_with('l'));
                        break;
                    }
                    _ => {}
                }
            }
        } else {
            files.push(a);
        }
    }
    if in_place {
        let skip = usize::from(!script_given);
        for f in files.into_iter().skip(skip) {
            w.write(f, what, false);
        }
    }
}

/// `perl -i`: its files (the first operand is the script unless `-e`/`-E` gave it).
fn perl(w: &mut Walk, rest: &[Arg], what: &str) {
    let mut in_place = false;
    let mut script_given = false;
    let mut files = Vec::new();
    let mut i = 0;
    while let Some(a) = rest.get(i) {
        let t = a.text();
        i += 1;
        if let Some(cluster) = t
            .strip_prefix('-')
            .filter(|c| !c.is_empty() && !c.starts_with('-'))
        {
            for c in cluster.chars() {
                match c {
                    'i' => {
                        in_place = true;
                        break;
                    }
                    'e' | 'E' => {
                        script_given = true;
                        i += usize::from(cluster.ends_with(c));
                        break;
                    }
                    _ => {}
                }
            }
        } else if !t.starts_with('-') {
            files.push(a);
        }
    }
    if in_place {
        let skip = usize::from(!script_given);
        for f in files.into_iter().skip(skip) {
            w.write(f, what, false);
        }
    }
}
