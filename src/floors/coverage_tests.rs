//! Unit tests of the coverage ledger's parsing, including its known limits.

use std::path::Path;

use super::{declarations, is_test_file};
use crate::floors::gherkin::carries_id;

/// Does some declaring line of the file carry `id`?
fn covers(name: &str, text: &str, id: &str) -> bool {
    declarations(name, text)
        .iter()
        .any(|(_, l)| carries_id(l, id))
}

#[test]
fn test_files_by_name_or_directory() {
    for yes in [
        "tests/add.rs",
        "pkg/test/x.py",
        "web/__tests__/a.js",
        "calc_test.go",
        "test_calc.py",
        "a.test.ts",
        "a.spec.js",
        "calc_spec.rb",
        "features/add.feature",
    ] {
        assert!(is_test_file(Path::new(yes)), "{yes}");
    }
    for no in [
        "src/lib.rs",
        "testing/x.rs",
        "src/test_helpers.rs",
        "contest.py",
        "latest.js",
    ] {
        assert!(!is_test_file(Path::new(no)), "{no}");
    }
}

#[test]
fn rust_declarations_need_a_test_attribute() {
    let text = "\
// S3 is mentioned in a comment
fn s4_helper() {}
#[test]
fn s1_adds_two_numbers() {}

#[tokio::test]
#[should_panic(
    expected = \"x\"
)]
async fn s2_async() {}
#[rstest] fn s5_inline() {}
#[cfg(test)]
fn s6_not_a_test() {}
#[test]
/// doc comment between
pub(crate) fn s7_pub() {}
";
    for (id, want) in [
        ("S1", true),
        ("S2", true),
        ("S3", false),
        ("S4", false),
        ("S5", true),
        ("S6", false),
        ("S7", true),
    ] {
        assert_eq!(covers("add.rs", text, id), want, "{id}");
    }
    assert!(!covers("add.rs", text, "S10"));
}

#[test]
fn other_languages() {
    let py = "# def test_s9\ndef helper_s8():\n    pass\ndef test_s1_adds():\n    pass\nasync def test_s2():\n";
    assert!(covers("test_add.py", py, "S1") && covers("test_add.py", py, "S2"));
    assert!(!covers("test_add.py", py, "S8") && !covers("test_add.py", py, "S9"));

    let js = "describe('S9 suite', () => {\n  it('S1 adds', () => {});\n  test.each([1])('S2 each', () => {});\n  const items = ['S3'];\n});\n";
    assert!(covers("a.test.ts", js, "S1") && covers("a.test.ts", js, "S2"));
    assert!(!covers("a.test.ts", js, "S3") && !covers("a.test.ts", js, "S9"));

    let go = "func helperS3() {}\nfunc TestS1Adds(t *testing.T) {\n\tt.Run(\"S2 sub\", nil)\n}\n";
    assert!(
        !covers("a_test.go", go, "S1"),
        "TestS1Adds: the id is not delimited"
    );
    let go =
        "func Test_S1_adds(t *testing.T) {\n\tt.Run(\"S2 sub\", nil)\n}\nfunc helper_S3() {}\n";
    assert!(
        covers("a_test.go", go, "S1")
            && covers("a_test.go", go, "S2")
            && !covers("a_test.go", go, "S3")
    );

    let java = "@Test\n@DisplayName(\"x\")\nvoid s1_adds() {}\nvoid s2_helper() {}\n";
    assert!(covers("AddTest.java", java, "S1") && !covers("AddTest.java", java, "S2"));

    let feature =
        "Feature: add\n  Scenario: S1 adds\n  @S2\n  Scenario: subtracts\n  # S3 comment\n";
    assert!(covers("add.feature", feature, "S1") && covers("add.feature", feature, "S2"));
    assert!(!covers("add.feature", feature, "S3"));

    let rb = "describe 'x' do\n  it 'S1 adds' do\n  end\nend\n";
    assert!(covers("add_spec.rb", rb, "S1"));
}

/// Limit (seed): existence cannot tell a thorough test from a trivial one.
#[test]
fn limit_a_trivial_test_counts() {
    assert!(covers("t.rs", "#[test]\nfn s1_nothing() {}\n", "S1"));
    assert!(covers("test_t.py", "def test_s1():\n    pass\n", "S1"));
}

/// Limit (seed): a skipped test still carries its identifier.
#[test]
fn limit_a_skipped_test_counts() {
    assert!(covers(
        "t.rs",
        "#[test]\n#[ignore]\nfn s1_later() {}\n",
        "S1"
    ));
    assert!(covers(
        "test_t.py",
        "@pytest.mark.skip\ndef test_s1():\n",
        "S1"
    ));
    assert!(covers(
        "t.test.js",
        "it.skip('S1 later', () => {});\n",
        "S1"
    ));
    assert!(covers("T.java", "@Disabled\n@Test\nvoid s1() {}\n", "S1"));
}

/// Limit (seed): the id counts anywhere on the declaring line, not only in the test's name.
#[test]
fn limit_the_id_anywhere_on_the_declaring_line_counts() {
    assert!(covers(
        "t.rs",
        "#[test]\nfn unrelated() { assert!(true) } // S1\n",
        "S1"
    ));
    assert!(covers(
        "t.test.js",
        "it('adds', () => check('S1'));\n",
        "S1"
    ));
}
