//! The default step prompts (`manifest/prompts/<name>.md`), embedded in the binary beside the
//! default manifest that names them. `<name>-pr` and `<name>-direct` are a step's variants for
//! the node's delivery method (`driver::prompts::template_for`).

/// Prompt name → template text.
pub const DEFAULT_PROMPTS: &[(&str, &str)] = &[
    (
        "generate-design",
        include_str!("../../../manifest/prompts/generate-design.md"),
    ),
    (
        "create-prp",
        include_str!("../../../manifest/prompts/create-prp.md"),
    ),
    (
        "refine-design",
        include_str!("../../../manifest/prompts/refine-design.md"),
    ),
    (
        "to-issues",
        include_str!("../../../manifest/prompts/to-issues.md"),
    ),
    (
        "generate-spec",
        include_str!("../../../manifest/prompts/generate-spec.md"),
    ),
    (
        "implement",
        include_str!("../../../manifest/prompts/implement.md"),
    ),
    (
        "generate-tests",
        include_str!("../../../manifest/prompts/generate-tests.md"),
    ),
    (
        "review",
        include_str!("../../../manifest/prompts/review.md"),
    ),
    (
        "deliver",
        include_str!("../../../manifest/prompts/deliver.md"),
    ),
    (
        "deliver-pr",
        include_str!("../../../manifest/prompts/deliver-pr.md"),
    ),
    (
        "deliver-direct",
        include_str!("../../../manifest/prompts/deliver-direct.md"),
    ),
    (
        "integrate",
        include_str!("../../../manifest/prompts/integrate.md"),
    ),
    (
        "step-back",
        include_str!("../../../manifest/prompts/step-back.md"),
    ),
];
