//! The `delivered` floor's built-in GitHub adapter: a pull request on a GitHub host is asked
//! about with the GitHub CLI, `gh pr view URL --json state,mergeCommit,mergedAt`, when `gh` is on
//! `PATH` and no `[delivery] forge_command` is configured (which wins when set).
//!
//! A GitHub host is `github.com` (or `www.github.com`) or a GitHub Enterprise Cloud host
//! (`*.ghe.com`), and the URL's path is `/OWNER/REPO/pull/N`. A GitHub Enterprise Server on a
//! host of its own is not recognized by name: its `forge_command` can wrap `gh`
//! (`docs/architecture.md`, "The delivery proof and the forge").
//! `gh` answers with the credentials it already has (`gh auth login`, `GH_TOKEN`); splice passes
//! none and turns its prompts off (`GH_PROMPT_DISABLED`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The fields `gh pr view --json` is asked for.
pub const FIELDS: &str = "state,mergeCommit,mergedAt";

/// What `gh pr view` says about a pull request.
#[derive(Debug, PartialEq, Eq)]
pub enum PrState {
    Open,
    /// Merged; GitHub names the commit it made on the base branch (a merge, squash or rebase
    /// commit).
    Merged {
        merge_commit: Option<String>,
        merged_at: Option<String>,
    },
    /// Closed without merging.
    Closed,
}

/// The argv that asks `gh` (found at `gh`) about `url`.
pub fn argv(gh: &Path, url: &str) -> Vec<String> {
    vec![
        gh.to_string_lossy().into_owned(),
        "pr".into(),
        "view".into(),
        url.into(),
        "--json".into(),
        FIELDS.into(),
    ]
}

/// `url` is a pull request on a GitHub host (see the module doc).
pub fn is_github_pr(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return false;
    };
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = host.to_ascii_lowercase();
    let github = host == "github.com" || host == "www.github.com" || host.ends_with(".ghe.com");
    let parts: Vec<&str> = path
        .split(['?', '#'])
        .next()
        .unwrap_or("")
        .split('/')
        .collect();
    github
        && parts.len() >= 4
        && !parts[0].is_empty()
        && !parts[1].is_empty()
        && parts[2] == "pull"
        && !parts[3].is_empty()
        && parts[3].bytes().all(|b| b.is_ascii_digit())
}

/// Read `gh pr view --json state,mergeCommit,mergedAt`: one JSON object whose `state` is
/// `OPEN`, `MERGED` or `CLOSED`. Anything else is no answer.
pub fn parse_pr_view(stdout: &str) -> Option<PrState> {
    let value: Value = serde_json::from_str(stdout.trim()).ok()?;
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    match value.get("state")?.as_str()? {
        "OPEN" => Some(PrState::Open),
        "CLOSED" => Some(PrState::Closed),
        "MERGED" => Some(PrState::Merged {
            merge_commit: text(value.get("mergeCommit").and_then(|m| m.get("oid"))),
            merged_at: text(value.get("mergedAt")),
        }),
        _ => None,
    }
}

/// The `HOST/OWNER/REPO` a git remote's URL names on a GitHub host (see the module doc), for
/// `gh pr create --repo`: `https://github.com/o/r(.git)`, `ssh://git@github.com/o/r`,
/// `git@github.com:o/r.git`. Anything else is `None`.
pub fn repo_of_remote(url: &str) -> Option<String> {
    let rest = ["https://", "http://", "ssh://", "git://"]
        .iter()
        .find_map(|scheme| url.strip_prefix(scheme));
    let (host, path) = match rest {
        Some(rest) => rest.split_once('/')?,
        // scp-like: `user@host:owner/repo`.
        None => url.split_once(':').filter(|(h, _)| !h.contains('/'))?,
    };
    let host = host
        .rsplit('@')
        .next()?
        .split(':')
        .next()?
        .to_ascii_lowercase();
    let github = host == "github.com" || host == "www.github.com" || host.ends_with(".ghe.com");
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let parts: Vec<&str> = path.split('/').collect();
    let word = |w: &str| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    (github && parts.len() == 2 && parts.iter().all(|p| word(p)))
        .then(|| format!("{host}/{}/{}", parts[0], parts[1]))
}

/// The first executable `gh` in the directories of `path` (a `PATH` value).
pub fn find_gh(path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join("gh"))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_remotes() {
        for (url, repo) in [
            ("https://github.com/acme/calc.git", "github.com/acme/calc"),
            ("https://github.com/acme/calc", "github.com/acme/calc"),
            ("git@github.com:acme/calc.git", "github.com/acme/calc"),
            ("ssh://git@github.com/acme/calc", "github.com/acme/calc"),
            ("https://x.ghe.com/acme/calc.git", "x.ghe.com/acme/calc"),
        ] {
            assert_eq!(repo_of_remote(url).as_deref(), Some(repo), "{url}");
        }
        for no in [
            "/tmp/remote.git",
            "https://gitlab.com/acme/calc.git",
            "https://github.com/acme",
            "https://github.com/acme/calc/extra",
            "git@github.com:acme/c;alc.git",
            "file:///tmp/github.com/acme/calc",
        ] {
            assert_eq!(repo_of_remote(no), None, "{no}");
        }
    }

    #[test]
    fn github_pull_request_urls() {
        for yes in [
            "https://github.com/acme/calc/pull/7",
            "https://GitHub.com/acme/calc/pull/7/files",
            "https://github.com/acme/calc/pull/7#discussion",
            "https://acme.ghe.com/acme/calc/pull/12",
        ] {
            assert!(is_github_pr(yes), "{yes}");
        }
        for no in [
            "https://forge.example/acme/calc/pull/7",
            "https://gitlab.com/acme/calc/-/merge_requests/7",
            "https://codeberg.org/acme/calc/pulls/7",
            "https://github.com/acme/calc/issues/7",
            "https://github.com/acme/calc/pull/x",
            "https://github.com/acme/calc/pull/",
            "https://github.com.evil.example/acme/calc/pull/7",
            "github.com/acme/calc/pull/7",
            "ssh://github.com/acme/calc/pull/7",
        ] {
            assert!(!is_github_pr(no), "{no}");
        }
    }

    #[test]
    fn gh_answers() {
        let merged =
            r#"{"mergeCommit":{"oid":"abc"},"mergedAt":"2026-01-01T00:00:00Z","state":"MERGED"}"#;
        assert_eq!(
            parse_pr_view(merged),
            Some(PrState::Merged {
                merge_commit: Some("abc".into()),
                merged_at: Some("2026-01-01T00:00:00Z".into())
            })
        );
        let open = r#"{"mergeCommit":null,"mergedAt":null,"state":"OPEN"}"#;
        assert_eq!(parse_pr_view(open), Some(PrState::Open));
        assert_eq!(
            parse_pr_view(r#"{"state":"CLOSED"}"#),
            Some(PrState::Closed)
        );
        for bad in [
            "",
            "not json",
            r#"{"state":"DRAFT"}"#,
            r#"{"merged":true}"#,
            "[]",
        ] {
            assert_eq!(parse_pr_view(bad), None, "{bad}");
        }
    }

    #[test]
    fn gh_is_found_only_where_it_is_executable() {
        use std::os::unix::fs::PermissionsExt;
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        std::fs::write(a.path().join("gh"), "not executable").unwrap();
        std::fs::write(b.path().join("gh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(b.path().join("gh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let path = std::env::join_paths([a.path(), b.path()]).unwrap();
        assert_eq!(find_gh(Some(&path)), Some(b.path().join("gh")));
        let only_a = std::env::join_paths([a.path()]).unwrap();
        assert_eq!(find_gh(Some(&only_a)), None);
        assert_eq!(find_gh(None), None);
    }
}
