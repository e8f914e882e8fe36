//! Floor kinds and declared floors. [`FloorKind`] is one list (a macro): the enum, the names a
//! manifest uses, the parameters each kind reads and [`FloorKind::ALL`] all come from it, so they
//! cannot drift apart.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// The floor kinds, each with its name and the parameters it reads. One list: the enum, its
/// names, its parameters and [`FloorKind::ALL`] all come from it.
macro_rules! floor_kinds {
    ($($(#[$doc:meta])* $variant:ident => $name:literal [$($param:literal),*],)*) => {
        /// A kind of floor a manifest may declare.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum FloorKind { $($(#[$doc])* $variant,)* }

        impl FloorKind {
            /// Every kind, in declaration order.
            pub const ALL: &[FloorKind] = &[$(FloorKind::$variant,)*];

            /// The name a manifest uses.
            pub fn name(self) -> &'static str {
                match self { $(FloorKind::$variant => $name,)* }
            }

            /// The parameters a floor of this kind reads (besides `kind`).
            pub fn params(self) -> &'static [&'static str] {
                match self { $(FloorKind::$variant => &[$($param),*],)* }
            }
        }
    };
}

floor_kinds! {
    /// The artifact at `path` exists.
    FileExists => "file_exists" ["path"],
    /// The markdown at `path` has every heading in `headings`.
    Headings => "headings" ["path", "headings"],
    /// The PRP at `path` declares scenario ids (recorded on the campaign root).
    ScenariosDeclared => "scenarios_declared" ["path"],
    /// The spec at `path` is complete; its verdict and files are recorded.
    Spec => "spec" ["path"],
    /// The latest review at `path` passes against the current HEAD.
    Review => "review" ["path"],
    /// The split's children conserve the parent's scenarios, with provenance.
    ChildrenConserved => "children_conserved" [],
    /// Every sanctioned child is closed.
    ChildrenFinished => "children_finished" [],
    /// Every scenario id is carried by a test under the root's `test_paths`.
    Coverage => "coverage" ["read_in", "back_to"],
    /// One green run of the root's `suite_cmd` on the integration target.
    Suite => "suite" ["timeout_s"],
    /// The node's work landed on its target (ancestry or a merged PR).
    Delivered => "delivered" [],
    /// `argv` exits with `expect_exit`.
    Command => "command" ["argv", "expect_exit", "timeout_s"],
    /// A test run (`cmd` or `argv`, or a `junit` file) has no failures.
    Tests => "tests" ["cmd", "argv", "junit", "timeout_s"],
    /// SARIF findings (`file` or `argv`) below the `fail_on` levels.
    Sarif => "sarif" ["file", "argv", "fail_on", "timeout_s"],
    /// The step's commits since its base change test files, at least one, and nothing else.
    TestsOnly => "tests_only" [],
}

impl fmt::Display for FloorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for FloorKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for FloorKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        FloorKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = FloorKind::ALL.iter().map(|k| k.name()).collect();
                serde::de::Error::custom(format!(
                    "unknown floor kind \"{name}\" (known: {})",
                    known.join(", ")
                ))
            })
    }
}

/// A declared floor: its kind and the kind's parameters (paths are templates).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FloorSpec {
    /// Which floor.
    pub kind: FloorKind,
    /// The kind's parameters.
    #[serde(flatten)]
    pub params: Map<String, Value>,
}

impl FloorSpec {
    /// Parameter `key`, when it is a string.
    pub fn str_param(&self, key: &str) -> Option<&str> {
        self.params.get(key).and_then(Value::as_str)
    }
    /// Parameter `key`'s strings, when it is a list (else none).
    pub fn list_param(&self, key: &str) -> Vec<String> {
        match self.params.get(key) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        }
    }
}
