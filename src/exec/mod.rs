//! The executor (DESIGN §7): in the node's worktree ([`crate::worktree`]), it renders the step's
//! command and prompt, runs one dispatch with a timeout and a bounded log, and reads its usage
//! and cost.
//! It changes no bead: the runner records what it returns through the writer
//! (`record-exit`), and the agent signals finished work by calling `splice transition propose`.
//!
//! | module | what it holds |
//! |---|---|
//! | [`template`] | argv templates (`{{bead}}`, `{{step}}`, `{{prompt}}`, …); the prompt goes last unless named |
//! | [`prompt`] | step prompts with a bounded context (≤ 8 KiB) |
//! | [`dispatch`] | one run of an argv through [`crate::process`]: `SPLICE_*` env, own process group, timeout kills the group, a bounded log |
//! | [`usage`] | tokens, latency and cost from Claude Code stream-json, Codex `exec --json`, Gemini `--output-format json` or a usage file |
//! | [`response`] | a dispatch's final response (the agent's final answer in its log, `SPLICE_RESULT_FILE`, or the last line), bounded, for result branches |
//! | [`progress`] | what a dispatch in flight is doing, in words, from its log (stream-json events or plain lines) |
//! | [`guard`] | a Claude Code agent started with `--settings FILE` registering `splice guard` |
//!
//! A typical dispatch, as the runner drives it (`worktree` is [`crate::worktree`]):
//!
//! ```text
//! let wt = worktree::ensure(store.repo(), &store.worktrees_dir(), id, target)?;
//! worktree::prepare_for_attempt(&wt.path, step.resume, worktree::is_retry(&bead, attempt), worktree::step_base(&bead))?;
//! let paths = DispatchPaths::new(&store.runs_dir(), run_id, id, &step.name, attempt)?;
//! let prompt = prompt::render(&template_text, &PromptVars::for_dispatch(..))?;
//! let argv = template::command_argv(&config.agent.command_for(&step.name), &vars, Some(&prompt), &paths.prompt_file)?;
//! let result = dispatch::dispatch(&DispatchSpec { timeout, usage, prices, ..DispatchSpec::new(..) })?;
//! ```

pub mod agent_file;
pub mod dispatch;
pub mod ended;
pub mod guard;
pub mod progress;
pub mod prompt;
pub mod response;
pub mod sandbox;
pub mod slurm;
pub mod template;
pub mod usage;

pub use dispatch::{DispatchPaths, DispatchResult, DispatchSpec, dispatch};
pub use usage::{CostSource, Usage};
