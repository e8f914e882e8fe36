//! `sarif`: lint and security findings from SARIF 2.1.0 (`file`, or the stdout of `argv`),
//! counted by level (error, warning, note, none) and by `security-severity` (critical ≥ 9,
//! high ≥ 7, medium ≥ 4, low). Findings at a `fail_on` severity (default error, critical, high)
//! refuse. A missing report or tool is never a silent pass: it escalates with
//! `{"status": "incomplete"}`, or with `optional: true` passes as `{"status": "not-applicable"}`.
//!
//! Limit: a report on stdout over 64 MiB is cut in the middle (its first and last 32 MiB kept),
//! cannot be parsed and escalates as unreadable; such a tool should write a `file` instead.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Ctx, Floor, Outcome, tail, timeout_for};
use crate::model::manifest::{FloorKind, FloorSpec};

pub struct Sarif;

const KIND: FloorKind = FloorKind::Sarif;

/// How much of a tool's stdout is kept (see the module's limit).
const REPORT_CAP: usize = 64 * 1024 * 1024;

const LEVELS: &[&str] = &[
    "error", "warning", "note", "none", "critical", "high", "medium", "low",
];

/// How many findings the evidence lists.
const MAX_FINDINGS: usize = 20;

/// The bucket of a numeric `security-severity`.
pub fn security_bucket(score: f64) -> &'static str {
    if score >= 9.0 {
        "critical"
    } else if score >= 7.0 {
        "high"
    } else if score >= 4.0 {
        "medium"
    } else {
        "low"
    }
}

fn severity_of(props: Option<&Value>) -> Option<f64> {
    let v = props?.get("security-severity")?;
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

/// One result of a SARIF log: its rule, level (error, warning, note, none), `security-severity`
/// bucket when it has one, first location and message.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub rule: Option<String>,
    pub level: &'static str,
    pub security: Option<&'static str>,
    pub location: Option<String>,
    pub message: Option<String>,
}

/// A SARIF log's results, and whether a run says its tool did not finish (an invocation with
/// `executionSuccessful: false`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Log {
    pub findings: Vec<Finding>,
    pub incomplete: bool,
}

fn level_name(level: &str) -> &'static str {
    match level {
        "error" => "error",
        "note" => "note",
        "none" => "none",
        _ => "warning",
    }
}

fn finding(result: &Value, rules: Option<&Vec<Value>>) -> Finding {
    let rule_id = result.get("ruleId").and_then(Value::as_str);
    let rule = rules.and_then(|rules| {
        result
            .get("ruleIndex")
            .and_then(Value::as_u64)
            .and_then(|i| rules.get(usize::try_from(i).ok()?))
            .or_else(|| {
                rules
                    .iter()
                    .find(|r| r.get("id").and_then(Value::as_str) == rule_id && rule_id.is_some())
            })
    });
    // SARIF: the result's level, else the rule's default, else `warning`.
    let level = result
        .get("level")
        .and_then(Value::as_str)
        .or_else(|| {
            rule.and_then(|r| r.pointer("/defaultConfiguration/level"))
                .and_then(Value::as_str)
        })
        .filter(|l| matches!(*l, "error" | "warning" | "note" | "none"))
        .map_or("warning", level_name);
    let security = severity_of(result.get("properties"))
        .or_else(|| severity_of(rule.and_then(|r| r.get("properties"))))
        .map(security_bucket);
    let location = result.pointer("/locations/0/physicalLocation").map(|p| {
        let uri = p
            .pointer("/artifactLocation/uri")
            .and_then(Value::as_str)
            .unwrap_or("?");
        match p.pointer("/region/startLine").and_then(Value::as_u64) {
            Some(line) => format!("{uri}:{line}"),
            None => uri.to_string(),
        }
    });
    Finding {
        rule: rule_id.map(str::to_string),
        level,
        security,
        location,
        message: result
            .pointer("/message/text")
            .and_then(Value::as_str)
            .map(|m| tail(m, 300)),
    }
}

/// Every result of a SARIF log. `Err` when the text is not a SARIF log.
pub fn read_log(text: &str) -> Result<Log, String> {
    let log: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let runs = log
        .get("runs")
        .and_then(Value::as_array)
        .ok_or("no `runs` array: not a SARIF log")?;
    let mut out = Log::default();
    for run in runs {
        let rules = run.pointer("/tool/driver/rules").and_then(Value::as_array);
        for result in run
            .get("results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.findings.push(finding(result, rules));
        }
        let failed_invocation = run
            .get("invocations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|i| i.get("executionSuccessful").and_then(Value::as_bool) == Some(false));
        out.incomplete |= failed_invocation;
    }
    Ok(out)
}

/// Counts by level and security bucket, and the first findings, of a SARIF log. `Err` when the
/// text is not a SARIF log.
pub fn count(text: &str) -> Result<(BTreeMap<String, u64>, Vec<Value>), String> {
    let log = read_log(text)?;
    let mut counts: BTreeMap<String, u64> = LEVELS.iter().map(|l| ((*l).to_string(), 0)).collect();
    for f in &log.findings {
        *counts.entry(f.level.to_string()).or_default() += 1;
        if let Some(bucket) = f.security {
            *counts.entry(bucket.to_string()).or_default() += 1;
        }
    }
    let findings = log
        .findings
        .iter()
        .take(MAX_FINDINGS)
        .map(|f| {
            json!({
                "rule": f.rule,
                "level": f.level,
                "security": f.security,
                "location": f.location,
                "message": f.message,
            })
        })
        .collect();
    Ok((counts, findings))
}

/// Why there is no report to read.
enum Missing {
    /// The floor declares neither `file` nor `argv`.
    Undeclared,
    /// A declared report or tool is not there: the reason and the evidence.
    Unavailable(String, Value),
}

/// The report's source (for the evidence) and its text: the `file`, else the stdout of `argv`.
fn read_report(spec: &FloorSpec, ctx: &Ctx) -> Result<(Value, String), Missing> {
    if let Some(file) = spec.str_param("file") {
        let rel = ctx.render(file);
        return match ctx.read_inside(&rel) {
            Ok(t) => Ok((json!({ "file": rel }), t)),
            Err(e) => Err(Missing::Unavailable(
                format!("cannot read the SARIF report: {e}"),
                json!({ "file": rel }),
            )),
        };
    }
    let argv = ctx.argv_param(spec);
    if argv.is_empty() {
        return Err(Missing::Undeclared);
    }
    let timeout = timeout_for(spec, ctx.step.timeout_s);
    let env = [("SPLICE_BEAD", ctx.bead.id.as_str())];
    // Linters exit non-zero when they find something, so the exit code is not the verdict.
    match ctx.run_confined(&argv, &ctx.workdir, &env, timeout, REPORT_CAP) {
        Ok(ran) if !ran.timed_out() => {
            Ok((json!({ "argv": argv, "exit_code": ran.code() }), ran.stdout))
        }
        Ok(_) => Err(Missing::Unavailable(
            format!("`{}` ran past {}s", argv.join(" "), timeout.as_secs()),
            json!({ "argv": argv }),
        )),
        Err(e) => Err(Missing::Unavailable(
            format!("cannot run `{}`: {e}", argv.join(" ")),
            json!({ "argv": argv }),
        )),
    }
}

impl Floor for Sarif {
    fn check(&self, spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        let optional = spec
            .params
            .get("optional")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let (source, text) = match read_report(spec, ctx) {
            Ok(report) => report,
            Err(Missing::Undeclared) => {
                return Outcome::escalate(
                    KIND,
                    "the floor declares neither `file` nor `argv`",
                    json!({ "status": "incomplete" }),
                );
            }
            Err(Missing::Unavailable(reason, mut evidence)) if optional => {
                evidence["status"] = json!("not-applicable");
                return Outcome::pass(
                    KIND,
                    format!("{reason} (optional: not applicable)"),
                    evidence,
                );
            }
            Err(Missing::Unavailable(reason, mut evidence)) => {
                evidence["status"] = json!("incomplete");
                return Outcome::escalate(KIND, reason, evidence);
            }
        };
        let (counts, findings) = match count(&text) {
            Ok(c) => c,
            Err(e) => {
                let mut evidence = source;
                evidence["status"] = json!("incomplete");
                return Outcome::escalate(
                    KIND,
                    format!("the SARIF output cannot be read: {e}"),
                    evidence,
                );
            }
        };
        let fail_on = {
            let declared = spec.list_param("fail_on");
            if spec.params.contains_key("fail_on") {
                declared
            } else {
                vec!["error".into(), "critical".into(), "high".into()]
            }
        };
        let failing: Vec<String> = fail_on
            .iter()
            .filter(|s| counts.get(s.as_str()).copied().unwrap_or(0) > 0)
            .map(|s| format!("{} {s}", counts.get(s.as_str()).copied().unwrap_or(0)))
            .collect();
        let mut evidence = source;
        evidence["status"] = json!("complete");
        evidence["counts"] = json!(counts);
        evidence["fail_on"] = json!(fail_on);
        evidence["findings"] = json!(findings);
        if failing.is_empty() {
            let total: u64 = ["error", "warning", "note", "none"]
                .iter()
                .filter_map(|l| counts.get(*l))
                .sum();
            Outcome::pass(
                KIND,
                format!("{total} finding(s), none at a failing severity"),
                evidence,
            )
        } else {
            Outcome::refuse(
                KIND,
                format!("findings at a failing severity: {}", failing.join(", ")),
                evidence,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_levels_and_security_severity() {
        let log = json!({
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {"name": "x", "rules": [
                    {"id": "R1", "defaultConfiguration": {"level": "error"}, "properties": {"security-severity": "9.8"}},
                    {"id": "R2", "properties": {"security-severity": 5}}
                ]}},
                "results": [
                    {"ruleId": "R1", "message": {"text": "bad"}},
                    {"ruleId": "R2", "ruleIndex": 1, "level": "note"},
                    {"ruleId": "R3", "properties": {"security-severity": "7.0"}},
                    {"ruleId": "R4", "level": "none", "properties": {"security-severity": 1.5}}
                ]
            }]
        });
        let (c, findings) = count(&log.to_string()).unwrap();
        assert_eq!(
            (c["error"], c["warning"], c["note"], c["none"]),
            (1, 1, 1, 1)
        );
        assert_eq!(
            (c["critical"], c["high"], c["medium"], c["low"]),
            (1, 1, 1, 1)
        );
        assert_eq!(findings.len(), 4);
        assert!(count("{}").is_err());
        assert!(count("not json").is_err());
    }
}
