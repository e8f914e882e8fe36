//! What a key does: move, collapse, a prompt, or a [`Command`] when it applies to the selected
//! node now; otherwise a message saying why not. The help line lists only the keys that apply.
//!
//! | key | applies when | does |
//! |---|---|---|
//! | ↑/↓, k/j | a tree is shown | move the selection |
//! | ←/→, h/l, Enter | the node has children (← on a leaf: to its parent) | collapse / expand / toggle |
//! | `a` | the node rests awaiting-human at a pending gate | approve it |
//! | `x` | the same | reject it (prompt: reason) |
//! | `c` | another holder's claim, the holder known dead | clear the claim (prompt: reason) |
//! | `u` | the node is parked | unpark it (prompt: reason) |
//! | `g` | the pass monitor asks about the node | guide it (prompt: text) |
//! | `S` | escalated: `suite_cmd` unset on the campaign root | set it (prompt: command) |
//! | `o`/`e` | the node has an artifact path | open it in `$PAGER`/`$EDITOR` |
//! | `r`, `p`, `d` | no run is going | a background run, one pass, a dry-run pass |
//! | `s` | a background run is going | stop it |
//! | `P` | no run is going | crystallize notes into a plan (prompt: the notes file) |
//! | `A` | always | approve a plan: its campaign is created (prompt: the plan file) |
//! | `D` | always | the design pane: talk with the design agent (below) |
//! | `q` | always | quit (a background run stopped first) |
//! | `?` | always | every key, or only those that apply |
//!
//! In the design pane, what is typed is the person's next turn (⏎ sends it) or a slash command:
//! `/crystallize`, `/approve [REASON]` (REASON overrides the critic's must-fix findings),
//! `/abort`; Esc leaves the pane, the session kept (`D` resumes it).

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::model::Rest;

use super::{Command, Model, Prompt};

/// The command a prompt's text completes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Then {
    Reject { bead: String, step: String },
    ClearClaim { bead: String },
    Unpark { bead: String },
    Guide { bead: String },
    SetSuiteCmd { bead: String },
    Crystallize,
    ApprovePlan,
}

impl Then {
    fn command(self, text: String) -> Command {
        match self {
            Then::Reject { bead, step } => Command::Reject {
                bead,
                step,
                reason: text,
            },
            Then::ClearClaim { bead } => Command::ClearClaim { bead, reason: text },
            Then::Unpark { bead } => Command::Unpark { bead, reason: text },
            Then::Guide { bead } => Command::Guide { bead, text },
            Then::SetSuiteCmd { bead } => Command::SetSuiteCmd { bead, cmd: text },
            Then::Crystallize => Command::Crystallize { notes: text },
            Then::ApprovePlan => Command::ApprovePlan { plan: text },
        }
    }
}

/// Every key, for `?`.
pub(super) const ALL_KEYS: &[(&str, &str)] = &[
    ("↑↓/jk", "move"),
    ("←→/hl/⏎", "fold"),
    ("a", "approve"),
    ("x", "reject"),
    ("c", "clear claim"),
    ("u", "unpark"),
    ("g", "guide"),
    ("S", "suite command"),
    ("o", "open"),
    ("e", "edit"),
    ("r", "run"),
    ("s", "stop"),
    ("p", "pass"),
    ("d", "dry-run"),
    ("P", "plan from notes"),
    ("A", "approve plan"),
    ("D", "design"),
    ("q", "quit"),
    ("?", "keys"),
];

pub(super) fn key(m: &mut Model, key: KeyEvent) -> Option<Command> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    if m.prompt.is_some() {
        return prompt_key(m, key);
    }
    if m.design.is_some() {
        return design_key(m, key);
    }
    m.message = None;
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return (key.code == KeyCode::Char('c')).then_some(Command::Quit);
    }
    match key.code {
        KeyCode::Up | KeyCode::Char('k') => m.step_selection(-1),
        KeyCode::Down | KeyCode::Char('j') => m.step_selection(1),
        KeyCode::PageUp => m.step_selection(-10),
        KeyCode::PageDown => m.step_selection(10),
        KeyCode::Left | KeyCode::Char('h') => m.fold(Some(true)),
        KeyCode::Right | KeyCode::Char('l') => m.fold(Some(false)),
        KeyCode::Enter => m.fold(None),
        KeyCode::Char('?') => m.all_keys = !m.all_keys,
        KeyCode::Char('q') => return Some(Command::Quit),
        KeyCode::Char(c) => return m.command_key(c),
        _ => {}
    }
    None
}

/// A key while a prompt is open: typed text, Backspace, Enter submits, Esc cancels.
fn prompt_key(m: &mut Model, key: KeyEvent) -> Option<Command> {
    let prompt = m.prompt.as_mut()?;
    match key.code {
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => prompt.text.push(c),
        KeyCode::Backspace => {
            prompt.text.pop();
        }
        KeyCode::Esc => {
            m.prompt = None;
            m.message = Some("cancelled".into());
        }
        KeyCode::Enter => {
            let text = prompt.text.trim().to_string();
            if text.is_empty() {
                m.message = Some(format!("{} is empty: type it, or Esc", prompt.label));
                return None;
            }
            let p = m.prompt.take()?;
            m.message = None;
            return Some(p.then.command(text));
        }
        _ => {}
    }
    None
}

/// A key in the design pane: typed text, Backspace, ⏎ sends the line (a turn or a slash
/// command), Esc leaves.
fn design_key(m: &mut Model, key: KeyEvent) -> Option<Command> {
    let pane = m.design.as_mut()?;
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return (key.code == KeyCode::Char('c')).then_some(Command::Quit);
    }
    match key.code {
        KeyCode::Char(c) => pane.input.push(c),
        KeyCode::Backspace => {
            pane.input.pop();
        }
        KeyCode::Esc => {
            let kept = pane.session.clone();
            m.design = None;
            m.message = Some(match kept {
                Some(id) => format!("design session {id} kept: D resumes it"),
                None => "left the design pane".into(),
            });
        }
        KeyCode::Enter => {
            let line = std::mem::take(&mut pane.input);
            let line = line.trim();
            if line.is_empty() {
                return None;
            }
            let session = pane.session.clone();
            let Some(command) = line.strip_prefix('/') else {
                m.message = None;
                return Some(Command::DesignSay {
                    session,
                    text: line.to_string(),
                });
            };
            let (word, rest) = command.split_once(' ').unwrap_or((command, ""));
            let Some(session) = session else {
                m.message = Some(format!(
                    "/{word}: say something first: there is no session yet"
                ));
                return None;
            };
            let rest = rest.trim();
            return match word {
                "crystallize" => Some(Command::DesignCrystallize { session }),
                "approve" => Some(Command::DesignApprove {
                    session,
                    override_critic: (!rest.is_empty()).then(|| rest.to_string()),
                }),
                "abort" => Some(Command::DesignAbort { session }),
                _ => {
                    m.message = Some(format!(
                        "/{word}: unknown; /crystallize, /approve [REASON] or /abort"
                    ));
                    None
                }
            };
        }
        _ => {}
    }
    None
}

/// Why `c` does not apply to a claim whose holder is not known dead.
const CLAIM_ALIVE: &str = "its holder is alive or cannot be told: wait for it (`splice transition release --clear` from a shell if you know it is gone)";

impl Model {
    fn command_key(&mut self, c: char) -> Option<Command> {
        let out = match c {
            'a' => self
                .gate()
                .map(|(bead, step)| Some(Command::Approve { bead, step })),
            'x' => self.gate().map(|(bead, step)| {
                self.ask(
                    format!("reason to reject {bead} at {step}"),
                    Then::Reject { bead, step },
                )
            }),
            'c' => self.dead_claim().map(|bead| {
                self.ask(
                    format!("reason to clear the claim on {bead}"),
                    Then::ClearClaim { bead },
                )
            }),
            'u' => self.parked().map(|bead| {
                self.ask(
                    format!("what was fixed to unpark {bead}"),
                    Then::Unpark { bead },
                )
            }),
            'g' => self
                .question()
                .map(|bead| self.ask(format!("guidance for {bead}"), Then::Guide { bead })),
            'S' => self.missing_suite().map(|root| {
                self.ask(
                    format!("suite command for {root}"),
                    Then::SetSuiteCmd { bead: root },
                )
            }),
            'o' | 'e' => self.open_artifact().map(|path| {
                Some(Command::Open {
                    path,
                    edit: c == 'e',
                })
            }),
            'r' | 'p' | 'd' => self.idle_run().map(|()| {
                Some(match c {
                    'r' => Command::StartRun,
                    'p' => Command::Pass,
                    _ => Command::DryRun,
                })
            }),
            's' => self.background_run().map(|()| Some(Command::StopRun)),
            'P' => self.idle_run().map(|()| {
                self.ask(
                    "notes file to crystallize into a plan".into(),
                    Then::Crystallize,
                )
            }),
            'A' => Ok(self.ask("plan file to approve".into(), Then::ApprovePlan)),
            'D' => Ok(Some(Command::DesignOpen)),
            _ => return None,
        };
        match out {
            Ok(Some(cmd)) => Some(cmd),
            Ok(None) => None,
            Err(why) => {
                self.message = Some(format!("{c}: {why}"));
                None
            }
        }
    }

    /// Open a prompt; its command comes when it is submitted.
    fn ask(&mut self, label: String, then: Then) -> Option<Command> {
        self.prompt = Some(Prompt {
            label,
            text: String::new(),
            then,
        });
        None
    }

    fn selected_id(&self) -> Result<String, String> {
        self.selected
            .clone()
            .ok_or_else(|| "no node selected".to_string())
    }

    /// The selected node's pending gate: (bead, step).
    fn gate(&self) -> Result<(String, String), String> {
        let id = self.selected_id()?;
        match self.rest(&id) {
            Some(Rest::AwaitingHuman { gate: Some(g), .. }) => Ok((id, g.to_string())),
            _ => Err(format!("{id} has no pending gate")),
        }
    }

    fn dead_claim(&self) -> Result<String, String> {
        let id = self.selected_id()?;
        match self.rest(&id) {
            Some(Rest::Running { holder, .. }) => match self.holder_alive(holder) {
                Some(false) => Ok(id),
                _ => Err(format!("{id} is claimed by {holder}; {CLAIM_ALIVE}")),
            },
            _ => Err(format!("{id} has no claim by another holder")),
        }
    }

    fn parked(&self) -> Result<String, String> {
        let id = self.selected_id()?;
        match self.rest(&id) {
            Some(Rest::Parked { .. }) => Ok(id),
            _ => Err(format!("{id} is not parked")),
        }
    }

    fn question(&self) -> Result<String, String> {
        let id = self.selected_id()?;
        match self.rest(&id) {
            Some(Rest::AwaitingHuman {
                question: Some(_), ..
            }) => Ok(id),
            _ => Err(format!("the pass monitor asks nothing about {id}")),
        }
    }

    /// The campaign root whose `suite_cmd` is unset, when the selected node escalated for it
    /// (its check's suite floor report says `unset: ["suite_cmd", …]`).
    fn missing_suite(&self) -> Result<String, String> {
        let id = self.selected_id()?;
        let bead = self.bead(&id);
        let unset = bead
            .and_then(|b| b.check_since_entry())
            .is_some_and(|c| c.unset_config().contains(&"suite_cmd"));
        match (self.rest(&id), bead) {
            (Some(Rest::Escalated { .. }), Some(bead)) if unset => {
                Ok(self.root_of(bead).id.to_string())
            }
            _ => Err(format!("{id} did not escalate for a missing suite command")),
        }
    }

    fn open_artifact(&self) -> Result<String, String> {
        let id = self.selected_id()?;
        self.artifact(&id)
            .ok_or_else(|| format!("{id} has no artifact with a path"))
    }

    fn idle_run(&self) -> Result<(), String> {
        match &self.run {
            Some(bar) if bar.running() => Err(format!("run {} is going", bar.run)),
            _ => Ok(()),
        }
    }

    fn background_run(&self) -> Result<(), String> {
        match &self.run {
            Some(bar) if bar.running() && bar.background => Ok(()),
            Some(bar) if bar.running() => Err(format!(
                "run {} was started elsewhere: stop it there (Ctrl-C)",
                bar.run
            )),
            _ => Err("no run is going".into()),
        }
    }

    /// Move the selection by `by` rows shown (clamped); a new node's log starts empty.
    fn step_selection(&mut self, by: isize) {
        if self.visible.is_empty() {
            return;
        }
        let at = self.cursor().unwrap_or(0) as isize;
        let to = (at + by).clamp(0, self.visible.len() as isize - 1) as usize;
        let id = self.rows[self.visible[to]].id.clone();
        if self.selected.as_ref() != Some(&id) {
            self.log.clear();
            self.selected = Some(id);
        }
    }

    /// Collapse (`Some(true)`), expand (`Some(false)`) or toggle (`None`) the selected node; ←
    /// on a node with nothing to collapse selects its parent.
    fn fold(&mut self, collapse: Option<bool>) {
        let Some(row) = self
            .selected
            .as_ref()
            .and_then(|s| self.index.get(s).copied())
        else {
            return;
        };
        let r = &self.rows[row];
        let collapsed = self.collapsed.contains(&r.id);
        if !r.has_children || (collapse == Some(true) && collapsed) {
            if collapse == Some(true)
                && let Some(p) = r.parent
            {
                self.selected = Some(self.rows[p].id.clone());
                self.log.clear();
            }
            return;
        }
        let want = collapse.unwrap_or(!collapsed);
        let id = r.id.clone();
        if want {
            self.collapsed.insert(id);
        } else {
            self.collapsed.remove(&id);
        }
        self.refresh_visible();
    }

    /// The keys that apply now, for the help line (every key after `?`).
    pub fn help_keys(&self) -> Vec<(&'static str, &'static str)> {
        if self.prompt.is_some() {
            return vec![("⏎", "submit"), ("Esc", "cancel"), ("⌫", "erase")];
        }
        if self.design.is_some() {
            return vec![
                ("⏎", "send"),
                ("/crystallize", "plan"),
                ("/approve [REASON]", "start it"),
                ("/abort", "end"),
                ("Esc", "leave"),
            ];
        }
        if self.all_keys {
            return ALL_KEYS.to_vec();
        }
        let mut out = vec![("↑↓", "move")];
        let folds = self
            .selected
            .as_ref()
            .and_then(|s| self.index.get(s))
            .is_some_and(|&r| self.rows[r].has_children || self.rows[r].parent.is_some());
        if folds {
            out.push(("←→", "fold"));
        }
        let applies: [(&str, &str, bool); 10] = [
            ("a", "approve", self.gate().is_ok()),
            ("x", "reject", self.gate().is_ok()),
            ("c", "clear claim", self.dead_claim().is_ok()),
            ("u", "unpark", self.parked().is_ok()),
            ("g", "guide", self.question().is_ok()),
            ("S", "suite command", self.missing_suite().is_ok()),
            ("o", "open", self.open_artifact().is_ok()),
            ("e", "edit", self.open_artifact().is_ok()),
            ("r", "run", self.idle_run().is_ok()),
            ("s", "stop", self.background_run().is_ok()),
        ];
        out.extend(applies.iter().filter(|a| a.2).map(|&(k, w, _)| (k, w)));
        if self.idle_run().is_ok() {
            out.extend([("p", "pass"), ("d", "dry-run"), ("P", "plan")]);
        }
        out.extend([("A", "approve plan"), ("D", "design")]);
        out.extend([("q", "quit"), ("?", "keys")]);
        out
    }
}
