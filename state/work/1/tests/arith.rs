use calc::arith::{add, sub};

#[test]
fn s1_adds_two_numbers() {
    assert_eq!(add(2, 3), Some(5));
    assert_eq!(add(i64::MAX, 1), None);
}

#[test]
fn s2_subtracts_two_numbers() {
    assert_eq!(sub(7, 4), Some(3));
    assert_eq!(sub(i64::MIN, 1), None);
}
