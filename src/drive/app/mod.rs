//! The cockpit's app: the terminal (raw mode and the alternate screen, restored on every way
//! out, a panic included), the event loop, and each [`Command`] carried out.
//!
//! Each tick (about 100 ms) it reads the keys, follows the journal's committed records
//! ([`state`]), the newest run's `events.jsonl` and the selected node's dispatch log
//! ([`follow`]), and draws when the model was told something or the terminal's size changed (an
//! idle cockpit draws nothing). A run or pass started here goes on a background thread
//! ([`act`]).

mod act;
mod follow;
mod input;
mod state;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ratatui::DefaultTerminal;
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use ratatui::crossterm::{cursor, execute, terminal};

use super::model::{Command, Model, Msg};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::transition::Who;
use input::{Input, Tty};

/// How often the app looks at keys, the journal and the run.
const TICK: Duration = Duration::from_millis(100);

/// SIGTERM, SIGHUP (the ssh connection dropped) or a SIGINT sent from outside: the cockpit
/// quits as on `q` — a run of its own stopped, the terminal given back.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALLED.store(true, Ordering::SeqCst);
}

fn catch_signals() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for sig in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic.
        unsafe {
            libc::signal(sig, handler);
        }
    }
}

/// What `splice drive` was asked.
pub struct Opts {
    pub scope: Option<String>,
    pub jobs: Option<u32>,
    /// The caller, recognized once before anything runs (a person: the command admits no
    /// dispatched session). Kept: while a run of the cockpit is live, this process is that
    /// run's runner, and would no longer be recognized as a person.
    pub who: Who,
}

/// Run the cockpit until `q`.
pub fn drive(store: &Store, opts: Opts) -> Result<()> {
    let state = state::State::load(store, opts.scope.as_deref())?;
    let mut app = App {
        store: store.clone(),
        model: Model::new(opts.scope.clone()),
        follow_run: follow::RunFollower::new(store.runs_dir(), store.dir()),
        follow_log: follow::LogFollower::default(),
        background: act::Background::new(),
        input: Input::open(),
        fault: None,
        told: true,
        state,
        opts,
    };
    // NO_COLOR (https://no-color.org): set and not empty, the view draws without colour.
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        app.model.set_color(false);
    }
    app.model.update(Msg::State(Box::new(app.state.read())));
    catch_signals();
    let mut screen = Screen::enter()?;
    let result = app.run(&mut screen);
    // Whatever ended the loop, a run of this cockpit is stopped before the terminal is given
    // back.
    app.background.stop_and_wait();
    drop(screen);
    result
}

/// The terminal in raw mode on the alternate screen; given back when dropped (and by ratatui's
/// panic hook on a panic).
struct Screen {
    term: DefaultTerminal,
}

impl Screen {
    fn enter() -> Result<Screen> {
        let term = ratatui::try_init().map_err(|e| Error::io("the terminal", e))?;
        Ok(Screen { term })
    }

    /// Hand the terminal to a child process until `f` returns, then take it back.
    fn handed_over<T>(&mut self, f: impl FnOnce() -> T) -> Result<T> {
        let mut out = std::io::stdout();
        let left = terminal::disable_raw_mode()
            .and_then(|()| execute!(out, terminal::LeaveAlternateScreen, cursor::Show));
        left.map_err(|e| Error::io("the terminal", e))?;
        let value = f();
        let back = terminal::enable_raw_mode()
            .and_then(|()| execute!(out, terminal::EnterAlternateScreen, cursor::Hide))
            .and_then(|()| self.term.clear());
        back.map_err(|e| Error::io("the terminal", e))?;
        Ok(value)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// Whether the loop goes on.
#[derive(PartialEq)]
enum Flow {
    Go,
    Quit,
}

struct App {
    store: Store,
    opts: Opts,
    model: Model,
    state: state::State,
    follow_run: follow::RunFollower,
    follow_log: follow::LogFollower,
    background: act::Background,
    /// The terminal the keys come from, watched for keys and for a hang-up.
    input: Input,
    /// The last fault reading the state, told once.
    fault: Option<String>,
    /// Whether the model was told something (a key, a message) since the last frame.
    told: bool,
}

impl App {
    fn run(&mut self, screen: &mut Screen) -> Result<()> {
        // The size of the last frame: a terminal resized since is drawn again, told or not.
        let mut drawn = None;
        loop {
            let size = screen.term.size().ok();
            if self.told || size != drawn {
                screen
                    .term
                    .draw(|f| super::view::render(&self.model, f))
                    .map_err(|e| Error::io("the terminal", e))?;
                self.told = false;
                drawn = size;
            }
            if self.keys(screen)? == Flow::Quit {
                return Ok(());
            }
            self.tick();
        }
    }

    /// The keys pressed within a tick, each carried out.
    fn keys(&mut self, screen: &mut Screen) -> Result<Flow> {
        let mut wait = TICK;
        if SIGNALLED.load(Ordering::SeqCst) {
            return Ok(Flow::Quit);
        }
        // Wait on the terminal ourselves first ([`input`]): crossterm's reader spins on a
        // terminal that has hung up, so it is never asked then.
        match self.input.wait(wait) {
            Tty::Gone => return Ok(Flow::Quit),
            Tty::Quiet => return Ok(Flow::Go),
            Tty::Readable => wait = Duration::ZERO,
            Tty::Unknown => {}
        }
        while event::poll(wait).map_err(|e| Error::io("the terminal", e))? {
            wait = Duration::ZERO;
            let ev = event::read().map_err(|e| Error::io("the terminal", e))?;
            // A resize, a paste, a key released: drawn again all the same.
            self.told = true;
            let Event::Key(key) = ev else {
                continue;
            };
            if key.kind != KeyEventKind::Press {
                continue;
            }
            if let Some(cmd) = self.model.key(key)
                && self.command(cmd, screen)? == Flow::Quit
            {
                return Ok(Flow::Quit);
            }
        }
        Ok(Flow::Go)
    }

    /// What changed since the last tick, told to the model.
    fn tick(&mut self) {
        match self.state.refresh() {
            Ok(read) => {
                self.fault = None;
                if let Some(read) = read {
                    self.tell(Msg::State(Box::new(read)));
                }
            }
            // Told once, and tried again at the next tick.
            Err(e) => {
                let fault = format!("reading the state: {e}");
                if self.fault.as_ref() != Some(&fault) {
                    self.tell(Msg::Done(Err(fault.clone())));
                    self.fault = Some(fault);
                }
            }
        }
        let background = &mut self.background;
        for msg in self.follow_run.poll(|run| background.is_own(run)) {
            self.tell(msg);
        }
        if let Some(done) = self.background.poll() {
            self.tell(Msg::Done(done));
        }
        let log = self
            .model
            .selected()
            .and_then(|id| self.state.feed().bead(id))
            .and_then(|b| follow::dispatch_log(&self.store.runs_dir(), b));
        if let Some(msg) = self.follow_log.poll(log) {
            self.tell(msg);
        }
    }

    /// Tell the model `msg`; the next loop draws it.
    fn tell(&mut self, msg: Msg) {
        self.model.update(msg);
        self.told = true;
    }

    /// Carry out one command and tell the model how it went.
    fn command(&mut self, cmd: Command, screen: &mut Screen) -> Result<Flow> {
        if matches!(
            cmd,
            Command::DesignSay { .. } | Command::DesignCrystallize { .. }
        ) {
            // The design agent takes a while: say so before waiting on it.
            self.model
                .update(Msg::Done(Ok("waiting for the design agent…".into())));
            let _ = screen.term.draw(|f| super::view::render(&self.model, f));
        }
        if let Some((done, pane)) = act::design(&self.store, &self.opts.who, &cmd) {
            if let Some(pane) = pane {
                self.tell(Msg::Design(Box::new(pane)));
            }
            self.tell(Msg::Done(done));
            return Ok(Flow::Go);
        }
        if let Some(done) = act::write(&self.store, &self.opts.who, &cmd) {
            self.tell(Msg::Done(done));
            return Ok(Flow::Go);
        }
        let scope = self.opts.scope.clone();
        let done = match cmd {
            Command::Open { path, edit } => self.open(screen, &path, edit)?,
            Command::StartRun => self
                .background
                .start(&self.store, scope, self.opts.jobs, false),
            Command::Pass => self
                .background
                .start(&self.store, scope, self.opts.jobs, true),
            Command::StopRun => self.background.stop(),
            Command::DryRun => act::dry_run(&self.store, scope),
            Command::Quit => {
                if self.background.is_live() {
                    self.tell(Msg::Done(self.background.stop()));
                    let _ = screen.term.draw(|f| super::view::render(&self.model, f));
                }
                return Ok(Flow::Quit);
            }
            // The writer's commands were carried out above.
            _ => return Ok(Flow::Go),
        };
        self.tell(Msg::Done(done));
        Ok(Flow::Go)
    }

    /// `$PAGER` (`edit`: `$EDITOR`) on `path`, in the foreground with the terminal handed over.
    fn open(
        &mut self,
        screen: &mut Screen,
        path: &str,
        edit: bool,
    ) -> Result<std::result::Result<String, String>> {
        let (var, fallback) = if edit {
            ("EDITOR", "vi")
        } else {
            ("PAGER", "less")
        };
        let program = std::env::var(var)
            .ok()
            .filter(|p| !p.trim().is_empty())
            .unwrap_or_else(|| fallback.to_string());
        let repo = self.store.repo().to_path_buf();
        let background = &mut self.background;
        screen.handed_over(|| open_with(&program, &repo, Path::new(path), background))
    }
}

/// Run `program` on `file` in the repository `repo` as git runs an editor (through `sh`, so
/// `$EDITOR` may carry arguments), recorded as a person's process for a live run of this
/// cockpit, and wait.
fn open_with(
    program: &str,
    repo: &Path,
    file: &Path,
    background: &mut act::Background,
) -> std::result::Result<String, String> {
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{program} \"$@\""))
        .arg(program)
        .arg(file)
        .current_dir(repo)
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let recorded = background.person_process(child.id());
    let waited = child.wait();
    recorded?;
    match waited {
        Ok(status) if status.success() => Ok(format!("closed {}", file.display())),
        Ok(status) => Err(format!("{program} exited with {status}")),
        // A live run of this cockpit makes it a child subreaper whose orphan reaper may have
        // reaped the child first: it has ended all the same.
        Err(e) if e.raw_os_error() == Some(libc::ECHILD) => {
            Ok(format!("closed {}", file.display()))
        }
        Err(e) => Err(format!("{program}: {e}")),
    }
}
