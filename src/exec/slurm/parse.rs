//! What Slurm's commands print, read. Each reader takes the command's stdout and returns `None`
//! (or nothing) for text it does not recognize: a job is never given a state it was not seen in.

use super::{JobEnd, JobState};

/// One line of `squeue --format=%i|%T|%j`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    pub id: String,
    pub state: JobState,
    pub name: String,
}

/// `scontrol show job --oneliner`: the job's name and state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    pub id: String,
    pub name: String,
    pub end: JobEnd,
}

/// `sbatch --parsable`: `<id>` or `<id>;<cluster>`.
pub fn parse_sbatch(out: &str) -> Option<String> {
    let id = out.trim().split(';').next()?.trim();
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_digit() || c == '_')).then(|| id.to_string())
}

/// `squeue --noheader --format=%i|%T|%j`, one job a line.
pub fn parse_squeue(out: &str) -> Vec<Listed> {
    out.lines()
        .filter_map(|line| {
            let mut parts = line.trim().splitn(3, '|');
            let id = parts.next()?.trim();
            let state = parts.next()?.trim();
            let name = parts.next()?.trim();
            (!id.is_empty() && !state.is_empty()).then(|| Listed {
                id: id.to_string(),
                state: JobState::parse(state),
                name: name.to_string(),
            })
        })
        .collect()
}

/// `scontrol show job --oneliner <id>`: `JobId=… JobName=… JobState=… ExitCode=c:s …`.
pub fn parse_scontrol(out: &str) -> Option<Shown> {
    let line = out.lines().find(|l| l.trim_start().starts_with("JobId="))?;
    let field = |key: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
    };
    let (code, signal) = exit_code(field("ExitCode")?)?;
    Some(Shown {
        id: field("JobId")?.to_string(),
        name: field("JobName").unwrap_or_default().to_string(),
        end: JobEnd {
            state: JobState::parse(field("JobState")?),
            code: Some(code),
            signal: (signal != 0).then_some(signal),
        },
    })
}

/// `sacct --noheader --parsable2 --allocations --format=State,ExitCode`: `STATE|c:s`.
pub fn parse_sacct(out: &str) -> Option<JobEnd> {
    let line = out.lines().find(|l| !l.trim().is_empty())?;
    let (state, code) = line.trim().split_once('|')?;
    let (code, signal) = exit_code(code)?;
    Some(JobEnd {
        state: JobState::parse(state),
        code: Some(code),
        signal: (signal != 0).then_some(signal),
    })
}

/// `<code>:<signal>`.
fn exit_code(text: &str) -> Option<(i32, i32)> {
    let (code, signal) = text.split_once(':')?;
    Some((code.parse().ok()?, signal.parse().ok()?))
}
