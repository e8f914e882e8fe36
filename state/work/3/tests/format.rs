use calc::format::format_result;

#[test]
fn s5_formats_a_result() {
    assert_eq!(format_result(-4), "= -4");
    assert_eq!(format_result(0), "= 0");
}
