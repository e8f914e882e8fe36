use calc::parse::eval;

#[test]
fn s3_parses_a_sum() {
    assert_eq!(eval("2 + 3"), Ok(5));
    assert_eq!(eval("10 - 4"), Ok(6));
}

#[test]
fn s4_rejects_garbage() {
    assert!(eval("2 +").is_err());
    assert!(eval("two + 3").is_err());
    assert!(eval("2 * 3").is_err());
}
