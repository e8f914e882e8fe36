//! Design mode (issue 35, `docs/plan.md`, "Design mode"): seed 000's design phase as a
//! conversation. A person writes, the design agent (`[plan] designer`, else `[agent] command`,
//! else the kind's built-in) answers, turn by turn; the conversation is kept in
//! `.splice/design/<session>/` and resumed from there by `splice design` and the cockpit alike.
//!
//! The agent reads the repository and writes only its scratch directory (the sandbox, where the
//! kernel offers it). It decides nothing: a `splice-request: crystallize|approve|abort` line in
//! its answer is recorded as a request and shown, and takes effect only when the person gives the
//! command ([`crystallize`], approval through `plan approve`, [`abort`]).
//!
//! The files are this module's alone, each replaced atomically; they may have been committed by
//! anyone, so they are read strictly and bounded.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::crystallize::{self, Crystallized};
use crate::error::{Error, Result};
use crate::model::printable::printable;
use crate::refusal::Refusal;
use crate::store::Store;

const PROMPT: &str = include_str!("../../manifest/prompts/design.md");
/// The schema of `session.json`.
pub const SCHEMA_VERSION: u32 = 1;
/// The longest turn kept, either side (longer answers are cut, saying so).
pub const TURN_CAP: usize = 16 * 1024;
/// The most turns a session holds.
pub const MAX_TURNS: usize = 400;
/// The largest session file read.
const FILE_CAP: u64 = 8 * 1024 * 1024;

/// Where a session is.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Turns are being exchanged.
    Conversation,
    /// A plan was crystallized from it (more turns and another crystallize may follow).
    Crystallized,
    /// Its plan was approved: the campaign runs.
    Approved,
    /// The person ended it.
    Aborted,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Conversation => "conversation",
            Status::Crystallized => "crystallized",
            Status::Approved => "approved",
            Status::Aborted => "aborted",
        }
    }

    /// Whether the session still takes turns and commands.
    pub fn open(self) -> bool {
        matches!(self, Status::Conversation | Status::Crystallized)
    }
}

/// A transition the design agent may ask for; the person's command carries it out.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Request {
    Crystallize,
    Approve,
    Abort,
}

impl Request {
    pub fn name(self) -> &'static str {
        match self {
            Request::Crystallize => "crystallize",
            Request::Approve => "approve",
            Request::Abort => "abort",
        }
    }
}

/// Who spoke.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Person,
    Agent,
}

/// One turn of the conversation (a line of `transcript.jsonl`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    pub role: Role,
    pub text: String,
    pub at: String,
    /// What the agent asked for at the end of its answer, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Request>,
}

/// `session.json`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Session {
    pub schema_version: u32,
    pub id: String,
    pub status: Status,
    pub started_at: String,
    pub updated_at: String,
    /// The plan crystallized from it (the session's `plan.json`), and its sha256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// How many turns the conversation had when its plan was crystallized: the plan stands for
    /// those.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crystallized_turns: Option<usize>,
    /// The campaign its approved plan started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign: Option<String>,
}

/// A session with its conversation.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Conversation {
    #[serde(flatten)]
    pub session: Session,
    pub turns: Vec<Turn>,
}

impl Conversation {
    /// The request of the agent's last turn, when it is the last turn and the person has not
    /// done what it asks since (a crystallize after it; an ended session does nothing more).
    pub fn pending_request(&self) -> Option<Request> {
        if !self.session.status.open() {
            return None;
        }
        let request = self
            .turns
            .last()
            .filter(|t| t.role == Role::Agent)
            .and_then(|t| t.request)?;
        let done = request == Request::Crystallize
            && self.session.crystallized_turns == Some(self.turns.len());
        (!done).then_some(request)
    }
}

fn root(store: &Store) -> PathBuf {
    store.dir().join("design")
}

fn dir_of(store: &Store, id: &str) -> PathBuf {
    root(store).join(id)
}

/// A session id is `d` and a number.
fn valid_id(id: &str) -> bool {
    id.len() <= 12
        && id.strip_prefix('d').is_some_and(|n| {
            !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0')
        })
}

fn number(id: &str) -> u64 {
    id.strip_prefix('d')
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The sessions' ids, oldest first (directories under `.splice/design/` named as ids).
pub fn ids(store: &Store) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root(store))
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| valid_id(n))
                .collect()
        })
        .unwrap_or_default();
    out.sort_by_key(|id| number(id));
    out
}

/// Every session, oldest first.
pub fn list(store: &Store) -> Result<Vec<Conversation>> {
    ids(store).iter().map(|id| load(store, id)).collect()
}

/// The session `id`, or (with none) the newest session still open.
pub fn resolve(store: &Store, id: Option<&str>) -> Result<Option<Conversation>> {
    match id {
        Some(id) => load(store, id).map(Some),
        None => {
            for id in ids(store).iter().rev() {
                let c = load(store, id)?;
                if c.session.status.open() {
                    return Ok(Some(c));
                }
            }
            Ok(None)
        }
    }
}

/// Read a session and its conversation.
pub fn load(store: &Store, id: &str) -> Result<Conversation> {
    if !valid_id(id) {
        return Err(Error::Invalid(format!(
            "{id:?} is not a design session id (d1, d2, …: `splice design list`)"
        )));
    }
    let dir = dir_of(store, id);
    let file = dir.join("session.json");
    if !file.exists() {
        return Err(Error::Invalid(format!(
            "no design session {id} ({} does not exist)",
            file.display()
        )));
    }
    let bytes = crate::safe_read::read(&file, FILE_CAP)?;
    let session: Session = serde_json::from_slice(&bytes)
        .map_err(|e| Error::bad_file(&file, format!("not a design session: {e}")))?;
    if session.id != id || session.schema_version != SCHEMA_VERSION {
        return Err(Error::bad_file(
            &file,
            format!(
                "names session {:?}, schema {}",
                session.id, session.schema_version
            ),
        ));
    }
    let file = dir.join("transcript.jsonl");
    let mut turns = Vec::new();
    if file.exists() {
        let text = crate::safe_read::read_text(&file, FILE_CAP)?;
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let turn: Turn = serde_json::from_str(line)
                .map_err(|e| Error::bad_file(&file, format!("line {}: {e}", n + 1)))?;
            turns.push(turn);
        }
    }
    Ok(Conversation { session, turns })
}

/// Write the session's two files, each replaced atomically (the transcript first: a crash
/// between them leaves a session whose status is one step behind, never a lost turn).
fn save(store: &Store, c: &Conversation) -> Result<()> {
    let dir = dir_of(store, &c.session.id);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let mut lines = String::new();
    for t in &c.turns {
        lines.push_str(&serde_json::to_string(t).expect("a turn serializes"));
        lines.push('\n');
    }
    crate::store::atomic::replace_file(&dir.join("transcript.jsonl"), lines.as_bytes())?;
    let bytes = serde_json::to_vec_pretty(&c.session).expect("a session serializes");
    crate::store::atomic::replace_file(&dir.join("session.json"), &bytes)
}

/// A new, empty session (not yet written: its first turn writes it).
pub fn new_session(store: &Store, now: &str) -> Conversation {
    let next = ids(store).last().map_or(0, |id| number(id)) + 1;
    Conversation {
        session: Session {
            schema_version: SCHEMA_VERSION,
            id: format!("d{next}"),
            status: Status::Conversation,
            started_at: now.to_string(),
            updated_at: now.to_string(),
            plan: None,
            sha256: None,
            crystallized_turns: None,
            campaign: None,
        },
        turns: Vec::new(),
    }
}

fn must_be_open(c: &Conversation) -> Result<()> {
    match c.session.status.open() {
        true => Ok(()),
        false => Err(Error::Refused(Refusal::DesignEnded {
            session: c.session.id.clone(),
            status: c.session.status.name().to_string(),
        })),
    }
}

/// The person's turn `text`, and the design agent's answer: both recorded once it answered (an
/// agent that fails records nothing, and says why).
pub fn say(store: &Store, mut c: Conversation, text: &str, now: &str) -> Result<Conversation> {
    must_be_open(&c)?;
    let text = text.trim();
    if text.is_empty() {
        return Err(Error::Invalid("an empty turn: say something".into()));
    }
    if c.turns.len() + 2 > MAX_TURNS {
        return Err(Error::Invalid(format!(
            "design session {} holds {MAX_TURNS} turns, the most it may: crystallize it, or \
             start another",
            c.session.id
        )));
    }
    c.turns.push(Turn {
        role: Role::Person,
        text: cut(text),
        at: now.to_string(),
        request: None,
    });
    let answer = ask_agent(store, &c)?;
    let request = request_of(&answer);
    c.turns.push(Turn {
        role: Role::Agent,
        text: cut(&answer),
        at: now.to_string(),
        request,
    });
    c.session.updated_at = now.to_string();
    save(store, &c)?;
    Ok(c)
}

/// Run the design agent on the conversation: its answer is what it printed.
fn ask_agent(store: &Store, c: &Conversation) -> Result<String> {
    let config = store.config()?;
    let scratch = crystallize::scratch_dir()?;
    let transcript_file = scratch.join("transcript.jsonl");
    let mut lines = String::new();
    for t in &c.turns {
        lines.push_str(&serde_json::to_string(t).expect("a turn serializes"));
        lines.push('\n');
    }
    let written =
        std::fs::write(&transcript_file, &lines).map_err(|e| Error::io(&transcript_file, e));
    let result = written.and_then(|()| {
        let repo = store.repo().to_path_buf();
        let prompt = PROMPT
            .replace("{{repo}}", &repo.display().to_string())
            .replace(
                "{{transcript_file}}",
                &transcript_file.display().to_string(),
            )
            .replace("{{transcript}}", &in_words(&c.turns));
        crystallize::run_agent(
            store,
            &config,
            config.plan.designer.as_deref(),
            prompt,
            &scratch,
            std::slice::from_ref(&repo),
            vec![
                ("SPLICE_DESIGN_SESSION".into(), c.session.id.clone().into()),
                (
                    "SPLICE_DESIGN_TRANSCRIPT".into(),
                    transcript_file.clone().into(),
                ),
            ],
        )
    });
    let _ = std::fs::remove_dir_all(&scratch);
    let (program, ran) = result?;
    if ran.code() != Some(0) {
        return Err(Error::Invalid(format!(
            "the design agent `{program}` ended {:?}: {}",
            ran.ran.exit,
            printable(ran.combined().trim())
        )));
    }
    let answer = ran.stdout.trim().to_string();
    if answer.is_empty() {
        return Err(Error::Invalid(format!(
            "the design agent `{program}` answered nothing"
        )));
    }
    Ok(answer)
}

/// The request a `splice-request: WORD` line asks for (the last such line).
pub fn request_of(answer: &str) -> Option<Request> {
    answer.lines().rev().find_map(|l| {
        let word = l.trim().strip_prefix("splice-request:")?.trim();
        match word.to_ascii_lowercase().as_str() {
            "crystallize" => Some(Request::Crystallize),
            "approve" => Some(Request::Approve),
            "abort" => Some(Request::Abort),
            _ => None,
        }
    })
}

fn cut(text: &str) -> String {
    crate::exec::prompt::truncate(text, TURN_CAP).into_owned()
}

/// The conversation as a person reads it (and as the agent and the crystallizer get it).
pub fn in_words(turns: &[Turn]) -> String {
    let mut out = String::new();
    for t in turns {
        let who = match t.role {
            Role::Person => "person",
            Role::Agent => "design agent",
        };
        out.push_str(&format!("## {who}\n\n{}\n\n", t.text.trim()));
    }
    out
}

/// Crystallize the conversation: it is written as the notes (`notes.md` in the session), the
/// design agent turns them into the session's `plan.json` (validated; judged by the critic when
/// one is configured: `plan crystallize`'s path), and the session records the plan.
pub fn crystallize(
    store: &Store,
    mut c: Conversation,
    now: &str,
) -> Result<(Conversation, Crystallized)> {
    must_be_open(&c)?;
    if c.turns.is_empty() {
        return Err(Error::Invalid(format!(
            "design session {} has no conversation to crystallize yet",
            c.session.id
        )));
    }
    let dir = dir_of(store, &c.session.id);
    let notes = dir.join("notes.md");
    let text = format!(
        "# Design session {}\n\nThe conversation between a person and the design agent, oldest \
         turn first. The plan is what the person settled on.\n\n{}",
        c.session.id,
        in_words(&c.turns)
    );
    crate::store::atomic::replace_file(&notes, text.as_bytes())?;
    let plan = dir.join("plan.json");
    let done = crystallize::crystallize(store, &notes, &plan)?;
    c.session.status = Status::Crystallized;
    c.session.plan = Some(plan.display().to_string());
    c.session.sha256 = Some(done.sha256.clone());
    c.session.crystallized_turns = Some(c.turns.len());
    c.session.updated_at = now.to_string();
    save(store, &c)?;
    Ok((c, done))
}

/// The session's crystallized plan file, for its approval.
pub fn plan_file(c: &Conversation) -> Result<PathBuf> {
    must_be_open(c)?;
    match &c.session.plan {
        Some(p) if c.session.status == Status::Crystallized => Ok(PathBuf::from(p)),
        _ => Err(Error::Invalid(format!(
            "design session {} has no crystallized plan yet: /crystallize it first",
            c.session.id
        ))),
    }
}

/// Record that the session's plan was approved and started `campaign`.
pub fn approved(
    store: &Store,
    mut c: Conversation,
    campaign: &str,
    now: &str,
) -> Result<Conversation> {
    c.session.status = Status::Approved;
    c.session.campaign = Some(campaign.to_string());
    c.session.updated_at = now.to_string();
    save(store, &c)?;
    Ok(c)
}

/// End the session: it takes no more turns or commands.
pub fn abort(store: &Store, mut c: Conversation, now: &str) -> Result<Conversation> {
    must_be_open(&c)?;
    c.session.status = Status::Aborted;
    c.session.updated_at = now.to_string();
    save(store, &c)?;
    Ok(c)
}

/// Whether `path` is inside a session's directory (so the cockpit can name a session's plan).
pub fn session_of_plan(store: &Store, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root(store)).ok()?;
    let id = rel.components().next()?.as_os_str().to_str()?;
    valid_id(id).then(|| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_asks_only_with_a_whole_request_line_and_the_last_one_counts() {
        assert_eq!(
            request_of("ok\nsplice-request: crystallize\n"),
            Some(Request::Crystallize)
        );
        assert_eq!(
            request_of("splice-request: abort\nthen\n  splice-request: APPROVE"),
            Some(Request::Approve)
        );
        assert_eq!(request_of("say splice-request: approve in words"), None);
        assert_eq!(request_of("splice-request: merge-to-main"), None);
    }

    #[test]
    fn session_ids_are_d_and_a_number_and_nothing_else() {
        for ok in ["d1", "d42"] {
            assert!(valid_id(ok), "{ok}");
        }
        for bad in [
            "d",
            "d0",
            "d01",
            "x1",
            "d1/..",
            "../d1",
            "d-1",
            "d12345678901234",
        ] {
            assert!(!valid_id(bad), "{bad}");
        }
    }
}
