//! A plan critic's verdict (issue 35, `docs/plan.md`, "The critic"): typed findings, each with a
//! category, a severity and `must_fix`, bound to the sha256 of the plan it judged. A plan whose
//! verdict holds a must-fix finding is not approved unless a person overrides it with a reason.
//!
//! The critic is an agent: what it prints is read strictly, and output that cannot be read is
//! itself a must-fix finding (the plan was not judged), never a pass.

use serde::{Deserialize, Serialize};

/// The current schema of a recorded verdict.
pub const SCHEMA_VERSION: u32 = 1;

/// What a finding is about (seed 000's categories; `unclassified` for a critic that prints
/// lines).
pub const CATEGORIES: [&str; 7] = [
    "correctness",
    "security",
    "scalability",
    "maintainability",
    "complexity",
    "operability",
    "unclassified",
];

/// How bad a finding is.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Informational.
    Info,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High: must be fixed.
    High,
    /// Critical: must be fixed.
    Critical,
}

impl Severity {
    /// High and critical findings must be fixed before the plan runs (seed 000's rule).
    pub fn must_fix(self) -> bool {
        self >= Severity::High
    }

    /// Its word in the critique.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

/// One finding.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// Its category (one of [`CATEGORIES`]).
    pub category: String,
    /// How bad it is.
    pub severity: Severity,
    /// True exactly when the severity is high or critical.
    pub must_fix: bool,
    /// What is wrong.
    pub issue: String,
    /// How the critic would fix it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_mitigation: Option<String>,
}

/// A critic's verdict on one plan, as recorded (`.splice/runs/critiques/<sha256>.json`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Critique {
    /// The file's shape ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The plan file as the critic was given it.
    pub plan: String,
    /// sha256 of the plan's bytes when it was judged: the verdict stands for that form only.
    pub sha256: String,
    /// When it was judged.
    pub at: String,
    /// The critic's exit code (none when it was killed).
    pub exit_code: Option<i32>,
    /// What the critic found.
    pub findings: Vec<Finding>,
    /// Concerns across the plan, not one task's.
    #[serde(default)]
    pub cross_cutting_concerns: Vec<String>,
    /// The critic's verdict in words.
    #[serde(default)]
    pub overall_assessment: String,
}

impl Critique {
    /// The must-fix findings.
    pub fn must_fix(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.must_fix)
    }

    /// Whether the plan may be approved on this verdict without an override.
    pub fn passed(&self) -> bool {
        self.must_fix().next().is_none()
    }
}

/// The critic's typed answer (seed 000's `submit_critique`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Typed {
    critiques: Vec<TypedFinding>,
    #[serde(default)]
    cross_cutting_concerns: Vec<String>,
    must_fix_before_execution: bool,
    overall_assessment: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TypedFinding {
    category: String,
    severity: Severity,
    issue: String,
    #[serde(default)]
    suggested_mitigation: Option<String>,
}

/// The older answer: `{"verdict": "PASS"|"FAIL", "findings": ["…"]}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Verdict {
    verdict: String,
    #[serde(default)]
    findings: Vec<String>,
}

/// What a critic's output says: its findings, its concerns and its assessment. Read in order:
///
/// - **typed** JSON, `{"critiques": [{category, severity, issue, suggested_mitigation?}],
///   "cross_cutting_concerns"?, "must_fix_before_execution", "overall_assessment"}`: a finding
///   must-fix when high or critical; `must_fix_before_execution` must agree, and an unknown
///   category or field is unreadable;
/// - a **verdict**, JSON `{"verdict", "findings": ["…"]}` or lines (the first the verdict,
///   `PASS`/`FAIL`, optionally `verdict: …`; the rest findings): untyped, so under `PASS` each
///   finding is `info`, and under anything else each is a `high` must-fix finding (one saying
///   the verdict when it gave none).
///
/// A critic that exited other than 0, or printed nothing readable, has not judged the plan: one
/// must-fix finding says so.
pub fn read(stdout: &str, exit_code: Option<i32>) -> (Vec<Finding>, Vec<String>, String) {
    let trimmed = stdout.trim();
    if exit_code != Some(0) {
        return unjudged(format!(
            "the critic exited {}, so it has not judged the plan",
            exit_code.map_or("by a signal or its time limit".into(), |c| c.to_string())
        ));
    }
    if trimmed.starts_with('{') && trimmed.contains("\"critiques\"") {
        return match serde_json::from_str::<Typed>(trimmed) {
            Ok(t) => typed(t).unwrap_or_else(unjudged),
            Err(e) => unjudged(format!("the critic's answer could not be read: {e}")),
        };
    }
    let (verdict, findings) = match serde_json::from_str::<Verdict>(trimmed) {
        Ok(v) => (v.verdict, v.findings),
        Err(_) => {
            let mut lines = trimmed.lines().map(str::trim).filter(|l| !l.is_empty());
            let verdict = lines.next().unwrap_or("").to_string();
            (verdict, lines.map(str::to_string).collect())
        }
    };
    let word = verdict
        .trim_start_matches("verdict:")
        .trim_start_matches("Verdict:")
        .trim();
    let passed = word.eq_ignore_ascii_case("pass");
    let severity = if passed {
        Severity::Info
    } else {
        Severity::High
    };
    let mut out: Vec<Finding> = findings
        .into_iter()
        .map(|issue| finding("unclassified", severity, issue))
        .collect();
    if !passed && out.is_empty() {
        let said = match word.is_empty() {
            true => "no verdict".to_string(),
            false => format!("the verdict {word:?}"),
        };
        out.push(finding(
            "unclassified",
            Severity::High,
            format!("the critic gave {said} and no finding"),
        ));
    }
    (out, Vec::new(), word.to_string())
}

fn typed(t: Typed) -> Result<(Vec<Finding>, Vec<String>, String), String> {
    let mut out = Vec::with_capacity(t.critiques.len());
    for (i, c) in t.critiques.into_iter().enumerate() {
        if !CATEGORIES.contains(&c.category.as_str()) {
            return Err(format!(
                "the critic's critiques[{i}].category {:?} is not one of {}",
                c.category,
                CATEGORIES.join(", ")
            ));
        }
        out.push(Finding {
            suggested_mitigation: c.suggested_mitigation,
            ..finding(&c.category, c.severity, c.issue)
        });
    }
    let any = out.iter().any(|f| f.must_fix);
    if any != t.must_fix_before_execution {
        return Err(format!(
            "the critic's must_fix_before_execution is {}, but {} of its critiques is high or \
             critical",
            t.must_fix_before_execution,
            if any { "one" } else { "none" }
        ));
    }
    Ok((out, t.cross_cutting_concerns, t.overall_assessment))
}

fn finding(category: &str, severity: Severity, issue: String) -> Finding {
    Finding {
        category: category.to_string(),
        severity,
        must_fix: severity.must_fix(),
        issue,
        suggested_mitigation: None,
    }
}

fn unjudged(why: String) -> (Vec<Finding>, Vec<String>, String) {
    (
        vec![finding("unclassified", Severity::High, why)],
        Vec::new(),
        String::new(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn must_fix(out: &(Vec<Finding>, Vec<String>, String)) -> Vec<&str> {
        out.0
            .iter()
            .filter(|f| f.must_fix)
            .map(|f| f.issue.as_str())
            .collect()
    }

    #[test]
    fn a_typed_answer_is_must_fix_exactly_where_a_finding_is_high_or_critical() {
        let t = r#"{"critiques": [
            {"category": "correctness", "severity": "high", "issue": "S2 has no task"},
            {"category": "complexity", "severity": "low", "issue": "t1 is big",
             "suggested_mitigation": "split it"}],
            "must_fix_before_execution": true, "overall_assessment": "close"}"#;
        let out = read(t, Some(0));
        assert_eq!(must_fix(&out), ["S2 has no task"]);
        assert_eq!(out.0[1].severity, Severity::Low);
        assert_eq!(out.0[1].suggested_mitigation.as_deref(), Some("split it"));
        assert_eq!(out.2, "close");
        let clean = r#"{"critiques": [], "must_fix_before_execution": false,
            "overall_assessment": "fine"}"#;
        assert!(must_fix(&read(clean, Some(0))).is_empty());
    }

    #[test]
    fn an_answer_that_cannot_be_trusted_is_one_must_fix_finding() {
        let lying = r#"{"critiques": [{"category": "security", "severity": "critical",
            "issue": "x"}], "must_fix_before_execution": false, "overall_assessment": ""}"#;
        for (out, says) in [
            (lying, "must_fix_before_execution is false"),
            (
                r#"{"critiques": [{"category": "vibes", "severity": "low", "issue": "x"}],
                 "must_fix_before_execution": false, "overall_assessment": ""}"#,
                "category \"vibes\"",
            ),
            (
                r#"{"critiques": [], "must_fix_before_execution": false,
                 "overall_assessment": "", "approved": true}"#,
                "could not be read",
            ),
            (
                r#"{"critiques": [{"category": "security", "severity": "dire", "issue": "x"}],
                 "must_fix_before_execution": true, "overall_assessment": ""}"#,
                "could not be read",
            ),
        ] {
            let read = read(out, Some(0));
            let fix = must_fix(&read);
            assert_eq!(fix.len(), 1, "{out}");
            assert!(fix[0].contains(says), "{fix:?}");
        }
        let fix = read("PASS\n", Some(3));
        assert!(must_fix(&fix)[0].contains("exited 3"), "{:?}", fix.0);
        assert!(must_fix(&read("PASS\n", None))[0].contains("signal"));
    }

    #[test]
    fn a_verdict_is_untyped_its_findings_info_under_pass_and_must_fix_otherwise() {
        let pass = read(r#"{"verdict": "PASS", "findings": ["ok"]}"#, Some(0));
        assert!(must_fix(&pass).is_empty());
        assert_eq!(pass.0[0].severity, Severity::Info);
        assert_eq!(pass.0[0].category, "unclassified");
        let fail = read("verdict: FAIL\nno tests for S2\n\nt1 too big\n", Some(0));
        assert_eq!(must_fix(&fail), ["no tests for S2", "t1 too big"]);
        assert_eq!(fail.2, "FAIL");
        let bare = read("FAIL\n", Some(0));
        assert!(must_fix(&bare)[0].contains("\"FAIL\""), "{:?}", bare.0);
        assert!(must_fix(&read("", Some(0)))[0].contains("no verdict"));
    }
}
