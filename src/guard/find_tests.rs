//! The removing `find`'s unit tests: which start paths are judged, what spares the state, and
//! that a dispatched session's rule is as it was. Each runs against a state tree on disk.

use super::*;
use crate::guard::bash;
use crate::guard::{Context, Decision, Dispatch};

/// A repository `r/` whose `.splice/` holds a bead, the journal and another node's worktree
/// with a `.rs` file, and a `src/` beside it.
struct Tree {
    _dir: tempfile::TempDir,
    repo: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().canonicalize().unwrap().join("r");
        let state = repo.join(".splice");
        for d in ["beads", "worktrees/sp-a/src", "worktrees/sp-own/src"] {
            std::fs::create_dir_all(state.join(d)).unwrap();
        }
        std::fs::create_dir_all(repo.join("src")).unwrap();
        for f in [
            "beads/sp-a.json",
            "journal.jsonl",
            "config.toml",
            "worktrees/sp-a/src/lib.rs",
        ] {
            std::fs::write(state.join(f), "").unwrap();
        }
        Tree { _dir: dir, repo }
    }

    fn ctx(&self, cwd: &Path) -> Context {
        Context {
            state: Some(self.repo.join(".splice")),
            repo: Some(self.repo.clone()),
            cwd: cwd.to_path_buf(),
            ..Context::default()
        }
    }

    /// The context of a session dispatched in `.splice/worktrees/sp-own`.
    fn dispatched(&self) -> Context {
        let own = self.repo.join(".splice/worktrees/sp-own");
        Context {
            own_worktree: Some(own.clone()),
            dispatch: Some(Dispatch::default()),
            temp: vec![PathBuf::from("/scratch")],
            ..self.ctx(&own)
        }
    }

    /// The deny reason for `command` run at the repository's root, or `None`.
    fn at_root(&self, command: &str) -> Option<String> {
        reason(bash::judge(command, &self.ctx(&self.repo)))
    }
}

fn reason(d: Decision) -> Option<String> {
    match d {
        Decision::Deny(r) => Some(r),
        Decision::Allow => None,
        Decision::Fault(f) => panic!("a fault: {f}"),
    }
}

#[test]
fn a_start_path_holding_the_state_is_denied_without_a_name_test_that_spares_it() {
    let t = Tree::new();
    let repo = t.repo.display();
    for command in [
        "find . -delete".to_string(),
        "find -L . -name '*.o' -delete".into(),
        "find . -name '*.o' -follow -delete".into(),
        "find . -type f -exec rm -f {} \\;".into(),
        "find . -name journal.jsonl -delete".into(),
        format!("find {repo} -name '*.jsonl' -delete"),
        format!("find {repo}/ -name 'sp-*' -delete"),
        "find . -name '*.o' -o -name x -delete".into(),
        "find . -name '*.o' -or -name x -delete".into(),
        "find . ! -name '*.o' -delete".into(),
        "find . -not -name '*.o' -delete".into(),
        "find . -name '*.o' , -delete".into(),
        "find . -delete -name '*.o'".into(),
        "find . -iname 'JOURNAL.*' -delete".into(),
        "find . -name '*.rs' -exec rm {} \\;".into(),
        "find . -name *.o -delete".into(),
        "find . -name \"$P\" -delete".into(),
        "find . -name '[[:alpha:]].o' -delete".into(),
        "find . -name '[' -delete".into(),
        "find . -name .splice -exec rm -rf {} +".into(),
        "find .s* -delete".into(),
        "cd src && find .. -delete".into(),
        "cd src && find ../src/.. -name 'beads' -exec rm -r {} +".into(),
        "find . src -delete".into(),
        "for d in src .; do find $d -delete; done".into(),
    ] {
        let r = t
            .at_root(&command)
            .unwrap_or_else(|| panic!("{command}: allowed"));
        assert!(r.contains("would remove splice's state"), "{command}: {r}");
    }
}

#[test]
fn a_name_test_matching_nothing_in_the_state_spares_it() {
    let t = Tree::new();
    let repo = t.repo.display();
    for command in [
        "find . -name '*.o' -delete".to_string(),
        "find . -type f -name '*.orig' -exec rm -f {} +".into(),
        "find . -name 'JOURNAL.JSONL' -delete".into(),
        "find . -iname '*.O' -delete".into(),
        "find . -name '*.o' -name 'j*' -delete".into(),
        "find . \\( -name '*.o' -type f \\) -delete".into(),
        "find . -maxdepth 2 -name '*.o' -newer src -delete".into(),
        "find . -name '*.tmp' -exec sed -i 's/a/b/' {} +".into(),
        "find . -name '\\*' -delete".into(),
        "find . -name '*.[oa]' -ok rm {} \\;".into(),
        format!("find {repo} -name '*.o' -delete"),
        format!("find -P {repo} -name '*.o' -delete"),
        "find .s* -name '*.o' -delete".into(),
        "cd src && find .. -name '*.o' -delete".into(),
        "find src -delete".into(),
        "find ./* -delete".into(),
        "find . -name '*.o' -print".into(),
    ] {
        assert_eq!(t.at_root(&command), None, "{command}");
    }
}

#[test]
fn the_reason_says_what_matched_and_what_to_do() {
    let t = Tree::new();
    let r = t.at_root("find . -name '*.rs' -delete").unwrap();
    assert!(
        r.contains("`-name *.rs` matches .splice/worktrees/sp-a/src/lib.rs"),
        "{r}"
    );
    assert!(
        r.contains("Give find a quoted `-name` test that matches nothing in .splice/"),
        "{r}"
    );
    let r = t.at_root("find . -name '*.o' -o -name x -delete").unwrap();
    assert!(r.contains("with `-o` in its expression"), "{r}");
    let r = t.at_root("find . -delete -name '*.o'").unwrap();
    assert!(r.contains("comes after what it removes"), "{r}");
}

#[test]
fn the_directories_on_the_way_to_the_state_count_as_names() {
    let t = Tree::new();
    let parent = t.repo.parent().unwrap().display();
    let r = t
        .at_root(&format!("find {parent} -name r -exec rm -rf {{}} +"))
        .unwrap();
    assert!(r.contains("`-name r` matches"), "{r}");
    assert!(t.at_root("find . -name . -exec rm -rf {} +").is_some());
    let none = format!("find {parent} -name '*.o' -exec rm -rf {{}} +");
    assert_eq!(t.at_root(&none), None);
}

#[test]
fn a_removing_exec_spares_the_state_only_running_a_program_whose_words_miss_it() {
    let t = Tree::new();
    for command in [
        "find . -name '*.o' -exec rm -rf .splice \\;",
        "find . -name '*.o' -exec mv -t .splice/beads {} +",
        "find . -name '*.o' -exec mv --target-directory=.splice/beads {} +",
        "find . -name '*.o' -exec sh -c 'rm \"$1\"' _ {} \\;",
        "find . -name '*.o' -exec bash -c 'rm x' \\;",
        "find . -name .spl -exec rm -rf {}ice \\;",
        "find . -name '*.o' -execdir rm -rf x \\;",
        "find . -name '*.o' -exec rm $X {} \\;",
    ] {
        assert!(t.at_root(command).is_some(), "{command}: allowed");
    }
    for command in [
        "find . -name '*.o' -exec rm -f -- {} +",
        "find . -name '*.o' -exec cp {} /tmp/objects/ \\;",
        "find . -name '*.o' -execdir rm {} +",
        "find . -name '*.o' -exec echo rm -rf .splice \\;",
    ] {
        assert_eq!(t.at_root(command), None, "{command}");
    }
}

#[test]
fn a_start_path_inside_the_state_is_judged_as_before_and_a_glob_there_too() {
    let t = Tree::new();
    for command in [
        "find .splice -name '*.o' -delete",
        "find .splice/beads -delete",
        "find .splice/b* -delete",
        "find .splice/$X -delete",
        "find .splice/worktrees/sp-a -name '*.o' -delete",
    ] {
        assert!(t.at_root(command).is_some(), "{command}: allowed");
    }
    let in_own = t.repo.join(".splice/worktrees/sp-own");
    let person = Context {
        own_worktree: Some(in_own.clone()),
        ..t.ctx(&in_own)
    };
    let own = "find . -delete";
    assert_eq!(
        reason(bash::judge(own, &person)),
        None,
        "a person's own checkout"
    );
}

#[test]
fn a_dispatched_session_keeps_its_rule() {
    let t = Tree::new();
    let ctx = t.dispatched();
    let repo = t.repo.display();
    let judge = |c: &str| reason(bash::judge(c, &ctx));
    assert_eq!(judge("find . -name '*.orig' -delete"), None);
    assert_eq!(judge("find src -delete"), None);
    assert_eq!(judge("find /scratch/x -name '*.o' -delete"), None);
    let outside = judge(&format!("find {repo}/src -name '*.o' -delete")).unwrap();
    assert!(outside.contains("outside your worktree"), "{outside}");
    let spared_root = judge(&format!("find {repo} -name '*.o' -delete")).unwrap();
    assert!(
        spared_root.contains("outside your worktree"),
        "{spared_root}"
    );
    assert!(judge(&format!("find {repo} -delete")).is_some());
}

#[test]
fn past_its_bound_the_walk_of_the_state_may_match() {
    let t = Tree::new();
    let tests = [("*.o".to_string(), false)];
    let mut names = Names::new(&tests).unwrap();
    assert_eq!(names.walk(&t.repo.join(".splice")), Ok(()));
    let mut names = Names::new(&tests).unwrap();
    names.limit = 3;
    let why = names.walk(&t.repo.join(".splice")).unwrap_err();
    assert!(why.contains("more than 3 entries"), "{why}");
}

#[test]
fn options_before_the_start_paths_are_skipped() {
    let opts = |words: &[&str]| {
        let args: Vec<Arg> = words.iter().map(|w| Arg::lit(w)).collect();
        leading_options(&args)
    };
    assert_eq!(opts(&["-H", "-D", "tree", "-O3", "."]), (4, false));
    assert_eq!(opts(&["-L", "."]), (1, true));
    assert_eq!(opts(&["-name", "x"]), (0, false));
    assert_eq!(opts(&["-D"]), (1, false));
}

/// `docs/security.md` ("What a pattern-matching guard cannot catch") says what a removing `find`
/// gets past the guard with; these are those cases.
#[test]
fn what_the_guard_cannot_see_in_a_find_is_allowed_as_security_md_says() {
    let t = Tree::new();
    std::os::unix::fs::symlink(&t.repo, t.repo.join("src/up")).unwrap();
    for command in [
        "find . -name '*.o' -exec env rm -rf {} \\;",
        "find src -exec rm -rf .splice \\;",
        "find -L src -delete",
    ] {
        assert_eq!(t.at_root(command), None, "{command}");
    }
}
