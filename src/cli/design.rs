//! `splice design`: design mode without the cockpit (`docs/plan.md`, "Design mode"). The same
//! session files as the cockpit's design pane (`.splice/design/<session>/`), so a conversation
//! begun in one is resumed in the other.

use super::exec::ExecArgs;
use super::{Global, output};
use crate::driver::design::{self, Conversation, Role};
use crate::error::{Error, Result};
use crate::model::printable::printable;
use crate::store::Store;
use crate::transition::{Verb, Who};

/// A conversation with the design agent before any code changes: talk scope, constraints and
/// acceptance conditions, then crystallize it into a plan and approve it.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: DesignCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum DesignCommand {
    /// Say MESSAGE to the design agent and print its answer. Without --session, the newest open
    /// session goes on (`--new` starts another). Exits 0 when it answered, 1 when the session
    /// has ended (approved or aborted) or a dispatched session asked, 2 when the agent failed
    /// (nothing recorded: the message names why).
    Say(SayArgs),
    /// Print a session's conversation (default: the newest open one).
    Show(ShowArgs),
    /// List the sessions: id, status, turns, plan, campaign.
    List(ListArgs),
    /// Crystallize the conversation into the session's plan (`plan crystallize` on it: the
    /// design agent writes the plan, it is validated, the critic judges it). Exit codes as
    /// `plan crystallize`.
    Crystallize(SessionArgs),
    /// Approve the session's crystallized plan and run its campaign (`plan approve` on it: the
    /// critic's verdict stands, exit codes as `plan approve`).
    Approve(ApproveArgs),
    /// End the session: it takes no more turns or commands.
    Abort(SessionArgs),
}

#[derive(clap::Args, Debug)]
pub struct SayArgs {
    /// What the person says.
    #[arg(value_name = "MESSAGE")]
    pub message: String,
    /// The session (d1, d2, …).
    #[arg(long, short = 's', value_name = "SESSION", conflicts_with = "new")]
    pub session: Option<String>,
    /// Start a new session with MESSAGE.
    #[arg(long)]
    pub new: bool,
    /// Print the session as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    /// The session (default: the newest open one).
    #[arg(long, short = 's', value_name = "SESSION")]
    pub session: Option<String>,
    /// Print it as JSON: the session's fields and its `turns`.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// Print them as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct SessionArgs {
    /// The session (default: the newest open one).
    #[arg(long, short = 's', value_name = "SESSION")]
    pub session: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct ApproveArgs {
    /// The session (default: the newest open one).
    #[arg(long, short = 's', value_name = "SESSION")]
    pub session: Option<String>,
    /// Approve over the must-fix findings of the critic's verdict, for REASON (recorded).
    #[arg(long, value_name = "REASON")]
    pub override_critic: Option<String>,
    #[command(flatten)]
    pub run: ExecArgs,
}

pub fn run(args: Args, global: &Global) -> Result<i32> {
    let planned = Store::open_or_plan(global.dir.as_deref())?;
    let verb = match &args.command {
        DesignCommand::Show(_) | DesignCommand::List(_) => Verb::DesignShow,
        DesignCommand::Approve(_) => Verb::PlanApprove,
        _ => Verb::Design,
    };
    crate::transition::authority::admit(verb, &Who::command_line(planned.dir()))?;
    match args.command {
        DesignCommand::Show(a) => show(&planned, &a),
        DesignCommand::List(a) => list(&planned, &a),
        DesignCommand::Say(a) => say(global, &a),
        DesignCommand::Crystallize(a) => crystallize(global, &a),
        DesignCommand::Approve(a) => approve(global, &a),
        DesignCommand::Abort(a) => abort(global, &a),
    }
}

fn open_session(store: &Store, id: Option<&str>) -> Result<Conversation> {
    design::resolve(store, id)?.ok_or_else(|| {
        Error::Invalid(
            "no open design session: start one with `splice design say --new MESSAGE`".into(),
        )
    })
}

fn say(global: &Global, a: &SayArgs) -> Result<i32> {
    let store = Store::open_or_create(global.dir.as_deref())?;
    let now = crate::clock::now_string()?;
    let c = match (a.new, &a.session) {
        (true, _) => design::new_session(&store, &now),
        (false, Some(id)) => design::load(&store, id)?,
        (false, None) => match design::resolve(&store, None)? {
            Some(c) => c,
            None => design::new_session(&store, &now),
        },
    };
    let c = design::say(&store, c, &a.message, &now)?;
    if a.json {
        output::print_json(&c);
        return Ok(0);
    }
    let last = c.turns.last().expect("say records the answer");
    let mut out = format!(
        "design session {}, turn {}\n{}\n",
        c.session.id,
        c.turns.len() / 2,
        printable(&last.text)
    );
    if let Some(r) = last.request {
        out.push_str(&format!(
            "the design agent asks to {}: it happens only if you say so (`splice design {}`)\n",
            r.name(),
            r.name()
        ));
    }
    output::out(&out);
    Ok(0)
}

fn show(store: &Store, a: &ShowArgs) -> Result<i32> {
    let c = open_session(store, a.session.as_deref())?;
    if a.json {
        output::print_json(&c);
        return Ok(0);
    }
    let s = &c.session;
    let mut out = format!(
        "design session {} ({}), started {}, {} turn(s)\n",
        s.id,
        s.status.name(),
        s.started_at,
        c.turns.len()
    );
    for t in &c.turns {
        let who = match t.role {
            Role::Person => "you",
            Role::Agent => "design agent",
        };
        out.push_str(&format!("\n[{who}] {}\n", printable(&t.text)));
    }
    if let Some(r) = c.pending_request() {
        out.push_str(&format!("\nthe design agent asks to {}\n", r.name()));
    }
    if let Some(p) = &s.plan {
        out.push_str(&format!("\nplan: {p}\n"));
    }
    if let Some(id) = &s.campaign {
        out.push_str(&format!("campaign: {id}\n"));
    }
    output::out(&out);
    Ok(0)
}

fn list(store: &Store, a: &ListArgs) -> Result<i32> {
    let all = design::list(store)?;
    if a.json {
        #[derive(serde::Serialize)]
        struct Listed<'a> {
            schema_version: u32,
            sessions: Vec<&'a design::Session>,
        }
        output::print_json(&Listed {
            schema_version: 1,
            sessions: all.iter().map(|c| &c.session).collect(),
        });
        return Ok(0);
    }
    let mut out = String::new();
    for c in &all {
        let s = &c.session;
        out.push_str(&format!(
            "{} {} {} turn(s){}{}\n",
            s.id,
            s.status.name(),
            c.turns.len(),
            s.plan
                .as_ref()
                .map_or(String::new(), |p| format!(" plan {p}")),
            s.campaign
                .as_ref()
                .map_or(String::new(), |id| format!(" campaign {id}"))
        ));
    }
    if all.is_empty() {
        out.push_str("no design sessions: `splice design say --new MESSAGE` starts one\n");
    }
    output::out(&out);
    Ok(0)
}

fn crystallize(global: &Global, a: &SessionArgs) -> Result<i32> {
    let store = Store::open_or_create(global.dir.as_deref())?;
    let now = crate::clock::now_string()?;
    let c = open_session(&store, a.session.as_deref())?;
    let (_, done) = design::crystallize(&store, c, &now)?;
    if a.json {
        output::print_json(&done);
    } else {
        output::out(&crate::driver::crystallize::human(&done).replace(
            &format!("splice plan approve {}", done.plan),
            "splice design approve",
        ));
    }
    Ok(if done.critic.as_ref().is_some_and(|c| !c.passed()) {
        1
    } else {
        0
    })
}

fn approve(global: &Global, a: &ApproveArgs) -> Result<i32> {
    let store = Store::open_or_create(global.dir.as_deref())?;
    let c = open_session(&store, a.session.as_deref())?;
    let plan = design::plan_file(&c)?;
    super::plan::run_plan_then(
        &plan,
        a.override_critic.as_deref(),
        &a.run,
        global,
        Verb::PlanApprove,
        |store, started| {
            let now = crate::clock::now_string()?;
            design::approved(store, c, &started.id, &now).map(|_| ())
        },
    )
}

fn abort(global: &Global, a: &SessionArgs) -> Result<i32> {
    let store = Store::open_or_create(global.dir.as_deref())?;
    let now = crate::clock::now_string()?;
    let c = open_session(&store, a.session.as_deref())?;
    let c = design::abort(&store, c, &now)?;
    if a.json {
        output::print_json(&c.session);
    } else {
        output::out(&format!("design session {} aborted\n", c.session.id));
    }
    Ok(0)
}
