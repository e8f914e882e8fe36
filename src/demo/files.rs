//! The example campaign of `state/`, embedded so `splice demo` works from any installed binary.

/// The campaign plan: title, scenarios, the split into children, the suite command.
pub const CAMPAIGN: &str = include_str!("../../state/campaign.json");

/// The project the campaign starts from, as (path, contents).
pub const PROJECT: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../../state/project/Cargo.toml")),
    (".gitignore", include_str!("../../state/project/.gitignore")),
    ("README.md", include_str!("../../state/project/README.md")),
    ("src/lib.rs", include_str!("../../state/project/src/lib.rs")),
    (
        "src/arith.rs",
        include_str!("../../state/project/src/arith.rs"),
    ),
    (
        "src/parse.rs",
        include_str!("../../state/project/src/parse.rs"),
    ),
    (
        "src/format.rs",
        include_str!("../../state/project/src/format.rs"),
    ),
    (
        "tests/.keep",
        include_str!("../../state/project/tests/.keep"),
    ),
];

/// Each child's work (1-based index), as (path, contents).
pub const WORK: &[(usize, &str, &str)] = &[
    (
        1,
        "src/arith.rs",
        include_str!("../../state/work/1/src/arith.rs"),
    ),
    (
        1,
        "tests/arith.rs",
        include_str!("../../state/work/1/tests/arith.rs"),
    ),
    (
        2,
        "src/parse.rs",
        include_str!("../../state/work/2/src/parse.rs"),
    ),
    (
        2,
        "tests/parse.rs",
        include_str!("../../state/work/2/tests/parse.rs"),
    ),
    (
        3,
        "src/format.rs",
        include_str!("../../state/work/3/src/format.rs"),
    ),
    (
        3,
        "tests/format.rs",
        include_str!("../../state/work/3/tests/format.rs"),
    ),
];
