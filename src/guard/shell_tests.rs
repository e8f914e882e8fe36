//! The shell parser's unit tests: quoting, operators, redirections, heredocs, substitutions.

use super::*;

fn cmds(src: &str) -> Vec<Command> {
    parse(src)
        .into_iter()
        .flat_map(|i| match i {
            Item::Pipeline(p) => p,
            _ => Vec::new(),
        })
        .collect()
}

fn words(c: &Command) -> Vec<String> {
    c.words
        .iter()
        .map(|w| w.literal().unwrap_or_else(|| format!("{:?}", w.parts)))
        .collect()
}

#[test]
fn quoting_joins_words_and_keeps_operators_inside_quotes() {
    let c = cmds(r#"rm -rf ".spl"'ice'/be\ ads "a;b" $'x\ty'"#);
    assert_eq!(words(&c[0]), ["rm", "-rf", ".splice/be ads", "a;b", "x\ty"]);
}

#[test]
fn operators_split_commands() {
    let c = cmds("a; b && c || d | e |& f & g\nh");
    let names: Vec<String> = c.iter().map(|c| words(c)[0].clone()).collect();
    assert_eq!(names, ["a", "b", "c", "d", "e", "f", "g", "h"]);
    let items = parse("a | b; c");
    assert!(matches!(&items[0], Item::Pipeline(p) if p.len() == 2));
}

#[test]
fn redirections_with_fd_prefixes() {
    let c = cmds("cmd 2>/dev/null >out &>both 3>>app <in 2>&1 >|clob <>rw >&file");
    let ops: Vec<(RedirOp, String)> = c[0]
        .redirs
        .iter()
        .map(|r| (r.op, r.target.literal().unwrap()))
        .collect();
    assert_eq!(
        ops,
        [
            (RedirOp::Write, "/dev/null".into()),
            (RedirOp::Write, "out".into()),
            (RedirOp::Write, "both".into()),
            (RedirOp::Write, "app".into()),
            (RedirOp::Read, "in".into()),
            (RedirOp::Dup, "1".into()),
            (RedirOp::Write, "clob".into()),
            (RedirOp::Write, "rw".into()),
            (RedirOp::Write, "file".into()),
        ]
    );
    assert_eq!(words(&c[0]), ["cmd"]);
}

#[test]
fn heredoc_bodies_are_data_attached_to_their_command() {
    let c = cmds("cat <<'EOF' > f\nrm -rf .splice\nEOF\necho done");
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].heredocs[0].body, "rm -rf .splice\n");
    assert!(c[0].heredocs[0].quoted);
    assert_eq!(words(&c[1]), ["echo", "done"]);
    let c = cmds("bash <<-X\n\trm a\n\tX\n");
    assert_eq!(c[0].heredocs[0].body, "rm a\n");
    assert!(!c[0].heredocs[0].quoted);
}

#[test]
fn substitutions_keep_their_inner_script() {
    let c = cmds("echo $(rm -rf \"a)\" b) `touch x` <(cat y) ${X:-def} $HOME ~/z");
    let parts: Vec<Part> = c[0]
        .words
        .iter()
        .skip(1)
        .flat_map(|w| w.parts.clone())
        .collect();
    assert_eq!(parts[0], Part::Subst("rm -rf \"a)\" b".into()));
    assert_eq!(parts[1], Part::Subst("touch x".into()));
    assert_eq!(parts[2], Part::ProcSubst("cat y".into()));
    assert_eq!(
        parts[3],
        Part::Param {
            name: "X".into(),
            default: Some("def".into())
        }
    );
    assert!(matches!(&parts[4], Part::Param { name, .. } if name == "HOME"));
    assert_eq!(parts[5], Part::Tilde(String::new()));
}

#[test]
fn reserved_words_and_assignments() {
    let c = cmds("if true; then D=.splice; rm -rf $D; fi; X=1 env");
    assert_eq!(words(&c[0]), ["true"]);
    assert_eq!(c[1].assigns[0].0, "D");
    assert!(c[1].words.is_empty());
    assert_eq!(words(&c[2])[0], "rm");
    assert_eq!(c[3].assigns[0].0, "X");
    assert_eq!(words(&c[3]), ["env"]);
    let items = parse("for f in a b; do rm $f; done");
    assert!(matches!(&items[0], Item::For { name, words } if name == "f" && words.len() == 2));
    let c = cmds("case $x in a|b) rm y;; *) touch z;; esac; ls");
    let names: Vec<String> = c.iter().map(|c| words(c)[0].clone()).collect();
    assert_eq!(names, ["rm", "touch", "ls"]);
    let c = cmds("f() { rm q; }; function g { touch r; }");
    let names: Vec<String> = c.iter().map(|c| words(c)[0].clone()).collect();
    assert_eq!(names, ["rm", "touch"]);
}

#[test]
fn odd_input_never_panics_and_still_parses_what_it_can() {
    for src in [
        "\"unterminated",
        "'x",
        "$(",
        "`",
        "${",
        "<<",
        "a <<EOF",
        "((((",
        "))))",
        "$'\\x",
        "\\",
        "2>",
        ">&",
        "case",
        "for",
        "for x in",
        "a |",
        "~",
        "$((1+2))",
        "\u{0}",
        "é $é ${é}",
    ] {
        let _ = parse(src);
    }
    let c = cmds("rm -rf .splice; echo \"unterminated");
    assert_eq!(words(&c[0]), ["rm", "-rf", ".splice"]);
    let deep = "$(".repeat(100_000);
    let _ = parse(&deep);
}
