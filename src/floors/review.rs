//! `review`: the latest `## Review` section of the review at `path` has the four verdicts
//! (Standards, Spec, Architecture, Evidence), none FAIL, and was made against the current HEAD.
//!
//! WARNING passes and is reported. A FAIL of the current HEAD refuses with `verdict: "FAIL"` and
//! the section's text (`text`) in its evidence, which the review step's result branch (`on_result`
//! in the manifest) reads to send the node back with that text as guidance. A stale review — its
//! `Reviewed-SHA` missing or not the current HEAD, a FAIL included — refuses with `stale: true`
//! and no `verdict`, so the reviewer is dispatched again on the new code; no FAIL branch matches
//! it. A FAIL is acted on once per reviewed commit. When a FAIL of this commit already sent the
//! node back (the implement step made no new commit):
//!
//! - the same review read again (its text's hash is one the node kept: the old review file, as
//!   the reviewer left it) refuses with `stale: true`, `acted_on: true` and no `verdict`, so the
//!   review step dispatches a fresh review of the unchanged HEAD;
//! - a fresh review (a text the node has not kept) that fails the commit again escalates, its
//!   text in the evidence: the implementer made no change in answer to the first FAIL, sending
//!   it back again would loop, and refusing as stale would dispatch the reviewer until attempts
//!   run out without anyone seeing the fresh FAIL. A person decides.
//!
//! Every review read with a `## Review` section travels to the writer to be kept
//! ([`Effect::KeepReview`], `store::reviews`), whatever the verdict. The file is read as hostile:
//! at most [`MAX_REVIEW_BYTES`], no link on its path, UTF-8.

use serde_json::{Value, json};

use super::{Ctx, Effect, Floor, Outcome, ReviewText, head, is_full_sha, unread};
use crate::model::bead::ReviewVerdict;
use crate::model::manifest::{FloorKind, FloorSpec};
use crate::safe_read;
use crate::store::redact::Redactor;
use crate::store::reviews::{MAX_REVIEW_BYTES, sha256_hex};

pub struct Review;

const KIND: FloorKind = FloorKind::Review;

/// The verdict lines every review must carry.
pub const VERDICTS: &[&str] = &["Standards", "Spec", "Architecture", "Evidence"];

/// How much of a failing review travels back as guidance.
const GUIDANCE_BYTES: usize = 4096;

/// One `## Review` section.
#[derive(Debug, Default, PartialEq)]
pub struct Section {
    pub text: String,
    pub sha: Option<String>,
    /// (name, verdict word as written, e.g. `PASS`) in `VERDICTS` order; missing ones absent.
    pub verdicts: Vec<(String, String)>,
}

/// Is this line a level-2 `Review` heading (`## Review`, `## Review 2`, `## Review — round 2`)?
fn is_review_heading(line: &str) -> bool {
    let Some(rest) = line.trim_end().strip_prefix("## ") else {
        return false;
    };
    let rest = rest.trim_start();
    rest.get(..6)
        .is_some_and(|w| w.eq_ignore_ascii_case("review"))
        && !rest[6..].starts_with(|c: char| c.is_alphanumeric())
}

/// `key: value` on a line, tolerating list markers and bold (`- **Spec:** PASS`).
fn field<'l>(line: &'l str, key: &str) -> Option<&'l str> {
    let l = line
        .trim()
        .trim_start_matches(['-', '*', '>', ' '])
        .trim_start();
    let (k, v) = l.split_once(':')?;
    if !k.trim().trim_matches('*').trim().eq_ignore_ascii_case(key) {
        return None;
    }
    Some(v.trim().trim_start_matches(['*', '`', ' ']))
}

/// Every `## Review` section, in order; the latest is the last.
pub fn sections(text: &str) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if is_review_heading(line) {
            out.push(Section::default());
            inside = true;
        } else if line.starts_with("# ") || line.starts_with("## ") {
            inside = false;
        }
        let Some(section) = out.last_mut().filter(|_| inside) else {
            continue;
        };
        section.text.push_str(line);
        section.text.push('\n');
        if let Some(v) = field(line, "Reviewed-SHA") {
            let sha = v.split_whitespace().next().unwrap_or_default();
            section.sha = Some(sha.trim_matches(['`', '*']).to_ascii_lowercase());
        }
        for name in VERDICTS {
            if let Some(v) = field(line, name) {
                let word: String = v.chars().take_while(char::is_ascii_alphabetic).collect();
                let word = word.to_ascii_uppercase();
                // A repeated line keeps the worst verdict.
                match section.verdicts.iter_mut().find(|(n, _)| n == name) {
                    Some((_, old)) if old.as_str() == "FAIL" => {}
                    Some((_, old)) => *old = word,
                    None => section.verdicts.push(((*name).to_string(), word)),
                }
            }
        }
    }
    out
}

impl Floor for Review {
    fn check(&self, spec: &FloorSpec, ctx: &Ctx) -> Outcome {
        let (rel, text) = match read_review(spec, ctx) {
            Ok(found) => found,
            Err(answer) => return *answer,
        };
        let all = sections(&text);
        let Some(latest) = all.last() else {
            return Outcome::refuse(
                KIND,
                format!("{rel} has no `## Review` section"),
                json!({ "path": rel }),
            );
        };
        let outcome = judge(ctx, (&rel, &text), all.len(), latest);
        let kept = ReviewText {
            fail: outcome.evidence.get("verdict") == Some(&json!("FAIL")),
            text,
            sha256: None,
            reviewed_sha: latest.sha.clone(),
            verdict: verdict_of(latest),
        };
        outcome.with_effect(Effect::KeepReview(Box::new(kept)))
    }
}

/// The review file at the floor's `path`: at most [`MAX_REVIEW_BYTES`] (it is kept in the state
/// users commit), no link on its path, UTF-8. `Err` is the floor's answer.
fn read_review(spec: &FloorSpec, ctx: &Ctx) -> Result<(String, String), Box<Outcome>> {
    let Some((rel, _)) = ctx.path_param(spec) else {
        return Err(Box::new(Outcome::escalate(
            KIND,
            "the floor declares no `path`",
            json!({}),
        )));
    };
    let refuse = |why: String| Box::new(Outcome::refuse(KIND, why, json!({ "path": rel })));
    let bytes = match safe_read::read_beneath(&ctx.workdir, &rel, MAX_REVIEW_BYTES) {
        Ok(bytes) => bytes,
        Err(safe_read::Unread::TooLarge(cap)) => {
            return Err(refuse(format!(
                "{rel} is larger than {}, the most a review may be (splice keeps it in \
                 .splice/reviews/, which users commit); write a shorter review",
                safe_read::size(cap)
            )));
        }
        Err(u) => return Err(refuse(unread(&rel, &u))),
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok((rel, text)),
        Err(_) => Err(refuse(format!("{rel} is not readable text (not UTF-8)"))),
    }
}

/// The latest section's verdict: FAIL if a line says so, else WARNING if one does, else PASS;
/// none when a line is missing or invalid.
fn verdict_of(latest: &Section) -> Option<ReviewVerdict> {
    let words: Vec<&str> = latest.verdicts.iter().map(|(_, v)| v.as_str()).collect();
    let valid = words.len() == VERDICTS.len()
        && words
            .iter()
            .all(|w| matches!(*w, "PASS" | "WARNING" | "FAIL"));
    if !valid {
        return None;
    }
    Some(if words.contains(&"FAIL") {
        ReviewVerdict::Fail
    } else if words.contains(&"WARNING") {
        ReviewVerdict::Warning
    } else {
        ReviewVerdict::Pass
    })
}

/// The floor's answer on the latest of `count` sections of the review file `rel`, whose whole
/// text is `text`.
fn judge(ctx: &Ctx, (rel, text): (&str, &str), count: usize, latest: &Section) -> Outcome {
    let verdicts: serde_json::Map<String, Value> = latest
        .verdicts
        .iter()
        .map(|(n, v)| (n.clone(), json!(v)))
        .collect();
    let mut evidence = json!({
        "path": rel,
        "reviews": count,
        "verdicts": verdicts,
        "reviewed_sha": latest.sha,
    });
    if let Some(refusal) = malformed(rel, latest, &mut evidence) {
        return refusal;
    }
    // Only a review of the current HEAD may act: a stale one (a FAIL included) only refuses,
    // so the reviewer runs again on the new code.
    let sha = match current(ctx, rel, latest, &mut evidence) {
        Ok(sha) => sha,
        Err(refusal) => return *refusal,
    };
    if let Some(back) = failed(ctx, (rel, text), latest, &sha, &mut evidence) {
        return back;
    }
    passed(rel, latest, sha, evidence)
}

/// The latest review lacks a verdict line, or has one that is not PASS, WARNING or FAIL.
fn malformed(rel: &str, latest: &Section, evidence: &mut Value) -> Option<Outcome> {
    let missing: Vec<&str> = VERDICTS
        .iter()
        .copied()
        .filter(|n| !latest.verdicts.iter().any(|(m, _)| m == n))
        .collect();
    let invalid: Vec<String> = latest
        .verdicts
        .iter()
        .filter(|(_, v)| !matches!(v.as_str(), "PASS" | "WARNING" | "FAIL"))
        .map(|(n, v)| format!("{n}: {v:?}"))
        .collect();
    if missing.is_empty() && invalid.is_empty() {
        return None;
    }
    evidence["missing"] = json!(missing);
    evidence["invalid"] = json!(invalid);
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("missing verdict line(s) {}", missing.join(", ")));
    }
    if !invalid.is_empty() {
        parts.push(format!(
            "verdict(s) not PASS, WARNING or FAIL: {}",
            invalid.join(", ")
        ));
    }
    Some(Outcome::refuse(
        KIND,
        format!("{rel}: the latest review has {}", parts.join("; ")),
        evidence.clone(),
    ))
}

/// The latest review says FAIL somewhere: refused, its verdict and text in the evidence for the
/// step's result branches — unless a FAIL of this commit sent the node back already: then the
/// same review read again refuses as stale, so a fresh review is dispatched, and a fresh review
/// escalates (the module doc). `text` is the whole review file.
fn failed(
    ctx: &Ctx,
    (rel, text): (&str, &str),
    latest: &Section,
    sha: &str,
    evidence: &mut Value,
) -> Option<Outcome> {
    let failed = named(latest, "FAIL");
    if failed.is_empty() {
        return None;
    }
    evidence["failed"] = json!(failed);
    if ctx.bead.sent_back_for(sha) {
        evidence["acted_on"] = json!(true);
        if !read_before(ctx, text) {
            evidence["text"] = json!(head(&latest.text, GUIDANCE_BYTES));
            return Some(Outcome::escalate(
                KIND,
                format!(
                    "{rel}: the implementer made no new commit after the review's FAIL of {sha}, \
                     and a fresh review fails it again (on {}); a person decides: fix it, or \
                     send it back with guidance",
                    failed.join(", ")
                ),
                evidence.clone(),
            ));
        }
        evidence["stale"] = json!(true);
        return Some(Outcome::refuse(
            KIND,
            format!(
                "{rel}: the review's FAIL of {sha} already sent the node back once, and HEAD \
                 has not moved since; review the current code afresh (a FAIL is acted on once \
                 per reviewed commit)"
            ),
            evidence.clone(),
        ));
    }
    evidence["verdict"] = json!("FAIL");
    evidence["text"] = json!(head(&latest.text, GUIDANCE_BYTES));
    Some(Outcome::refuse(
        KIND,
        format!("{rel}: the review says FAIL on {}", failed.join(", ")),
        evidence.clone(),
    ))
}

/// Has the node kept this review text before (read by an earlier check)? Compared by the hash
/// the writer keeps it under: of the text redacted as the writer redacts it
/// (`Store::keep_review`), in this same process and environment.
fn read_before(ctx: &Ctx, text: &str) -> bool {
    let redactor = Redactor::from_env(Some(&ctx.config.security.redact_env()));
    let text = redactor.text(text).unwrap_or_else(|| text.to_string());
    let sha256 = sha256_hex(&text);
    ctx.bead.pipeline.reviews.iter().any(|r| r.sha256 == sha256)
}

/// The verdict names that say `word`.
fn named<'s>(latest: &'s Section, word: &str) -> Vec<&'s str> {
    latest
        .verdicts
        .iter()
        .filter(|(_, v)| v == word)
        .map(|(n, _)| n.as_str())
        .collect()
}

/// The reviewed commit, when it is the current HEAD; else the refusal (or escalation when HEAD
/// cannot be read).
fn current(
    ctx: &Ctx,
    rel: &str,
    latest: &Section,
    evidence: &mut Value,
) -> Result<String, Box<Outcome>> {
    let Some(sha) = latest.sha.clone().filter(|s| is_full_sha(s)) else {
        evidence["stale"] = json!(true);
        return Err(Box::new(Outcome::refuse(
            KIND,
            format!(
                "{rel}: the latest review has no `Reviewed-SHA:` with a full 40-hex commit sha"
            ),
            evidence.clone(),
        )));
    };
    let head_sha = match git2::Repository::discover(&ctx.workdir).and_then(|r| {
        r.head()
            .and_then(|h| h.peel_to_commit())
            .map(|c| c.id().to_string())
    }) {
        Ok(h) => h,
        Err(e) => {
            return Err(Box::new(Outcome::escalate(
                KIND,
                format!(
                    "cannot read HEAD at {}: {}",
                    ctx.workdir.display(),
                    e.message()
                ),
                evidence.clone(),
            )));
        }
    };
    evidence["head"] = json!(head_sha);
    if sha != head_sha {
        evidence["stale"] = json!(true);
        return Err(Box::new(Outcome::refuse(
            KIND,
            format!(
                "{rel}: the review was made against {sha}, but HEAD is {head_sha}; review the current code"
            ),
            evidence.clone(),
        )));
    }
    Ok(sha)
}

/// A current review without FAIL passes (WARNING is reported).
fn passed(rel: &str, latest: &Section, sha: String, mut evidence: Value) -> Outcome {
    let warnings = named(latest, "WARNING");
    evidence["warnings"] = json!(warnings);
    evidence["verdict"] = json!(if warnings.is_empty() {
        "PASS"
    } else {
        "WARNING"
    });
    let reason = if warnings.is_empty() {
        format!("{rel}: four verdicts pass against HEAD {sha}")
    } else {
        format!(
            "{rel}: passes against HEAD {sha} with WARNING on {}",
            warnings.join(", ")
        )
    };
    Outcome::pass(KIND, reason, evidence).with_effect(Effect::SetReviewedSha(sha))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_section_wins_and_formats_are_tolerated() {
        let text = "# Reviews\n## Review 1\nReviewed-SHA: AAA\nStandards: FAIL bad\n## Reviewed files\nSpec: FAIL\n## Review — round 2\n- **Reviewed-SHA:** `BBB`\n- **Standards:** PASS\n- Spec: WARNING naming\nArchitecture: pass\n### Notes\nEvidence: PASS\n";
        let all = sections(text);
        assert_eq!(all.len(), 2);
        let last = all.last().unwrap();
        assert_eq!(last.sha.as_deref(), Some("bbb"));
        assert_eq!(
            last.verdicts,
            vec![
                ("Standards".to_string(), "PASS".to_string()),
                ("Spec".to_string(), "WARNING".to_string()),
                ("Architecture".to_string(), "PASS".to_string()),
                ("Evidence".to_string(), "PASS".to_string()),
            ]
        );
        // The text between sections ("## Reviewed files") belongs to no review.
        assert_eq!(all[0].verdicts.len(), 1);
    }

    #[test]
    fn repeated_line_keeps_fail() {
        let s = sections("## Review\nSpec: FAIL\nSpec: PASS\n");
        assert_eq!(
            s[0].verdicts,
            vec![("Spec".to_string(), "FAIL".to_string())]
        );
    }
}
