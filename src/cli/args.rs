//! Arguments several commands share: the bead a verb acts on, given positionally or with
//! `--bead`, and `--json` where JSON is printed anyway.

/// The bead a command acts on: `splice transition approve sp-x`, as bd users type it, or
/// `--bead sp-x`; one of the two, not both.
#[derive(clap::Args, Debug, Clone)]
pub struct BeadId {
    /// The bead to act on (or give it with --bead).
    #[arg(value_name = "ID", required_unless_present = "bead")]
    id: Option<String>,
    /// The bead to act on: the same as the positional ID.
    #[arg(long, value_name = "ID", conflicts_with = "id")]
    bead: Option<String>,
}

impl BeadId {
    /// The id given, whichever way (clap requires exactly one).
    pub fn id(&self) -> &str {
        self.id.as_deref().or(self.bead.as_deref()).unwrap_or("")
    }
}

/// `--json` on a command that prints JSON anyway (the writer's verbs, `init`, `snapshot`,
/// `decide`, `manifest show`): accepted, so `--json` means JSON on every command (`docs/cli.md`).
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct JsonAlias {
    /// Print JSON: what this command prints anyway (accepted on every command that prints JSON).
    #[arg(long)]
    pub json: bool,
}
