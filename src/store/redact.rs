//! Redaction: recognizable secrets never reach bead files or the journal, which users commit.
//!
//! The shell runs every after-image (and the journal's reason) through a [`Redactor`] before it
//! is journaled, so no verb can forget. Two kinds of secret are replaced by `[REDACTED:<kind>]`:
//!
//! * the values of environment variables whose names match `[security] redact_env` (default
//!   [`DEFAULT_REDACT_ENV`]), values of 8 characters or more (shorter ones match too much);
//! * token and key patterns ([`PATTERNS`]): cloud, forge and chat tokens, API keys, JWTs, private
//!   key blocks, `Bearer` credentials, and `password=`/`token:`-style assignments.
//!
//! Every string of a bead is scanned — free text, `metadata`, fields this version does not know
//! — except the fields splice owns (ids, steps, routes, timestamps, holders, verdicts…) where
//! they sit in splice's own structure: those are written by splice and must stay byte for byte.
//! A bead imported from bd is scanned only in its `pipeline` ([`Redactor::bead`]): its bd fields
//! are the user's file's text. What it cannot catch is listed in `docs/security.md`.

use std::sync::OnceLock;

use regex::{Regex, RegexSet};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::Bead;
use crate::model::config::DEFAULT_REDACT_ENV;

/// The shortest environment value redacted.
pub const MIN_ENV_VALUE: usize = 8;

/// `(kind, pattern)`. A pattern with a capture group `keep` keeps that group (e.g. the name in
/// `password=...`) and redacts the rest of the match.
pub const PATTERNS: [(&str, &str); 11] = [
    (
        "private-key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|\z)",
    ),
    ("aws-access-key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "github-token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("api-key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("stripe-key", r"\b[rsp]k_(?:live|test)_[0-9A-Za-z]{16,}"),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
    ),
    (
        "bearer",
        r"(?i)(?P<keep>\bbearer\s+)[A-Za-z0-9._~+/=-]{16,}",
    ),
    (
        "assignment",
        r#"(?i)(?P<keep>\b[A-Za-z0-9_.-]*(?:api[_-]?key|secret|token|passwd|password)["']?\s*[:=]\s*["']?)[^\s"',;\[][^\s"',;]{7,}"#,
    ),
];

/// Keys whose string values splice writes itself (where they sit in splice's structure), and
/// `imported`: a bd record's layout, the file's own text.
const OWNED: [&str; 31] = [
    "imported",
    "id",
    "parent",
    "status",
    "issue_type",
    "created_at",
    "updated_at",
    "closed_at",
    "depends_on_id",
    "type",
    "kind",
    "route",
    "step",
    "tier",
    "autonomy",
    "delivery",
    "target",
    "holder",
    "since",
    "at",
    "exit",
    "verdict",
    "state",
    "by",
    "supplied_by",
    "run",
    "split_by",
    "children",
    "head",
    "reviewed_sha",
    "scenarios",
];

/// Objects that are splice's structure (their owned keys are kept); anything else — `metadata`,
/// `evidence`, `trajectory`, unknown fields — is scanned whole, whatever its keys.
const STRUCTURE: [&str; 13] = [
    "pipeline",
    "dependencies",
    "lease",
    "last_dispatch",
    "exits",
    "proposal",
    "last_check",
    "gate",
    "dead_letter",
    "provenance",
    "split",
    "history",
    "attempts",
];

fn patterns() -> &'static (RegexSet, Vec<Regex>) {
    static COMPILED: OnceLock<(RegexSet, Vec<Regex>)> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let sources = PATTERNS.iter().map(|(_, p)| *p);
        let set = RegexSet::new(sources.clone()).expect("the patterns compile");
        let each = sources
            .map(|p| Regex::new(p).expect("the patterns compile"))
            .collect();
        (set, each)
    })
}

/// Replaces secrets in text; built per transition from the config and the environment.
#[derive(Debug, Default)]
pub struct Redactor {
    /// `(variable name, value)`, longest value first (a value inside another is not left half).
    values: Vec<(String, String)>,
}

impl Redactor {
    /// Redact the values of the variables in `env` whose names match `names` (glob patterns).
    pub fn new(names: &[String], env: impl IntoIterator<Item = (String, String)>) -> Redactor {
        let mut values: Vec<(String, String)> = env
            .into_iter()
            .filter(|(name, value)| {
                value.len() >= MIN_ENV_VALUE && names.iter().any(|p| glob_match(p, name))
            })
            .collect();
        values.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        values.dedup_by(|a, b| a.1 == b.1);
        Redactor { values }
    }

    /// With [`DEFAULT_REDACT_ENV`], over this process's environment.
    pub fn from_env(names: Option<&[String]>) -> Redactor {
        let default: Vec<String> = DEFAULT_REDACT_ENV.iter().map(|s| s.to_string()).collect();
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        Redactor::new(names.unwrap_or(&default), vars)
    }

    /// `text` with every secret replaced, or `None` when it holds none.
    pub fn text(&self, text: &str) -> Option<String> {
        let mut out: Option<String> = None;
        for (name, value) in &self.values {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(value.as_str()) {
                out = Some(current.replace(value.as_str(), &format!("[REDACTED:${name}]")));
            }
        }
        let (set, each) = patterns();
        let current = out.as_deref().unwrap_or(text);
        let hits = set.matches(current);
        if !hits.matched_any() {
            return out;
        }
        let mut current = current.to_string();
        for i in hits.iter() {
            let kind = PATTERNS[i].0;
            current = each[i]
                .replace_all(&current, |c: &regex::Captures| {
                    let keep = c.name("keep").map_or("", |m| m.as_str());
                    format!("{keep}[REDACTED:{kind}]")
                })
                .into_owned();
        }
        Some(current)
    }

    /// `bead` with every string but the fields splice owns redacted. Its id never changes.
    ///
    /// A bead imported from bd keeps its bd fields as the file gave them: they came from the
    /// user's repository, where the file already is, so redacting the copy protects nothing and
    /// would break the round trip. Only its `pipeline` (what agents wrote) is redacted.
    pub fn bead(&self, bead: Bead) -> Result<Bead> {
        let mut value = serde_json::to_value(&bead).expect("a bead always serializes");
        let changed = if bead.pipeline.imported.is_some() {
            value
                .get_mut("pipeline")
                .is_some_and(|p| self.walk(p, true))
        } else {
            self.walk(&mut value, true)
        };
        if !changed {
            return Ok(bead);
        }
        let broken = |why: String| {
            Error::Invalid(format!(
                "internal: redacting bead {} broke it ({why}); nothing was written",
                bead.id
            ))
        };
        let redacted: Bead = serde_json::from_value(value).map_err(|e| broken(e.to_string()))?;
        if redacted.id != bead.id {
            return Err(broken("its id changed".into()));
        }
        Ok(redacted)
    }

    /// Redact the strings under `value`; `structure` says it is splice's own object, whose owned
    /// keys are kept. Returns whether anything changed.
    fn walk(&self, value: &mut Value, structure: bool) -> bool {
        match value {
            Value::String(s) => match self.text(s) {
                Some(new) => {
                    *s = new;
                    true
                }
                None => false,
            },
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, v| self.walk(v, structure) | changed),
            Value::Object(map) => map.iter_mut().fold(false, |changed, (key, v)| {
                let owned = structure && OWNED.contains(&key.as_str());
                let inner = structure && STRUCTURE.contains(&key.as_str());
                (!owned && self.walk(v, inner)) | changed
            }),
            _ => false,
        }
    }
}

/// Does `name` match `pattern` (`*` any run of characters), ignoring ASCII case?
fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.to_ascii_uppercase(), name.to_ascii_uppercase());
    let parts: Vec<&str> = p.split('*').collect();
    if parts.len() == 1 {
        return p == n;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !n.starts_with(first) || !n[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &n[first.len()..n.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_a_shell_ignoring_case() {
        assert!(glob_match("*_KEY", "OPENAI_API_KEY"));
        assert!(glob_match("*_key", "OPENAI_API_KEY"));
        assert!(!glob_match("*_KEY", "KEYBOARD"));
        assert!(glob_match("*PASSWORD*", "DB_PASSWORD_FILE"));
        assert!(glob_match("A*B*C", "AxxBxxC") && !glob_match("A*B*C", "AxxC"));
        assert!(glob_match("EXACT", "exact") && !glob_match("EXACT", "EXACTLY"));
        assert!(!glob_match("AB*BA", "ABA"), "the ends may not overlap");
    }

    #[test]
    fn each_pattern_redacts_its_kind_and_leaves_plain_text() {
        let r = Redactor::default();
        let cases = [
            (
                "key AKIAIOSFODNN7EXAMPLE.",
                "key [REDACTED:aws-access-key].",
            ),
            (
                "Authorization: Bearer abcdefghijklmnop0123",
                "Authorization: Bearer [REDACTED:bearer]",
            ),
            (
                "password = 'hunter2hunter2'",
                "password = '[REDACTED:assignment]'",
            ),
            (
                "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
                "[REDACTED:api-key]",
            ),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
                "[REDACTED:jwt]",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(r.text(text).as_deref(), Some(want), "{text}");
        }
        for plain in [
            "token_budget = 100000000",
            "max_tokens: 4096",
            "specs/sp-4k2x.md",
            "2026-01-01T00:00:00Z",
            "a secret = short",
        ] {
            assert_eq!(r.text(plain), None, "{plain}");
        }
    }

    #[test]
    fn env_values_are_redacted_longest_first_and_short_ones_left() {
        let names = vec!["*_TOKEN".to_string()];
        let env = [
            ("A_TOKEN".to_string(), "abcdefgh".to_string()),
            ("B_TOKEN".to_string(), "abcdefgh-longer".to_string()),
            ("C_TOKEN".to_string(), "short".to_string()),
            ("HOME".to_string(), "/home/someone-long".to_string()),
        ];
        let r = Redactor::new(&names, env);
        assert_eq!(
            r.text("abcdefgh-longer abcdefgh short /home/someone-long")
                .as_deref(),
            Some("[REDACTED:$B_TOKEN] [REDACTED:$A_TOKEN] short /home/someone-long")
        );
    }

    #[test]
    fn owned_fields_are_kept_and_free_text_under_them_is_not() {
        let r = Redactor::new(
            &["*_TOKEN".to_string()],
            [("X_TOKEN".to_string(), "sp-4k2x-lookalike".to_string())],
        );
        let mut bead = Bead::new("sp-4k2x".into(), "t".into(), String::new(), "now");
        bead.pipeline.step = "sp-4k2x-lookalike".into();
        bead.metadata
            .insert("id".into(), "sp-4k2x-lookalike".into());
        let out = r.bead(bead).unwrap();
        assert_eq!(out.pipeline.step, "sp-4k2x-lookalike", "owned: kept");
        assert_eq!(
            out.metadata["id"], "[REDACTED:$X_TOKEN]",
            "free-form: scanned"
        );
    }
}
