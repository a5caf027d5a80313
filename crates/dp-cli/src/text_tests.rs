use super::{compact, number, prefix};

#[test]
fn prefixes_end_on_character_boundaries() {
    assert_eq!(prefix("0123456789abcdef", 12), "0123456789ab");
    assert_eq!(prefix("ab", 12), "ab");
    assert_eq!(prefix("", 12), "");
    assert_eq!(prefix(&"é".repeat(20), 12), "é".repeat(12));
    assert_eq!(prefix("a€€€€€€€€€€€€", 3), "a€€");
}

#[test]
fn compact_numbers_stay_short() {
    assert_eq!(compact(0.1234567, 3), "0.123");
    assert_eq!(compact(-2.5, 6), "-2.500000");
    assert_eq!(compact(0.0, 3), "0.000");
    assert_eq!(compact(1e300, 3), "1.000e300");
    assert_eq!(compact(-1e-300, 6), "-1.000000e-300");
    assert_eq!(compact(f64::NAN, 3), "NaN");
}

#[test]
fn numbers_are_short_and_whole_numbers_plain() {
    assert_eq!(number(1e308), "1e308");
    assert_eq!(number(-1e-300), "-1e-300");
    assert_eq!(number(0.1), "0.1");
    assert_eq!(number(2.0), "2");
    assert_eq!(number(1e16), "1e16");
    assert_eq!(number(f64::INFINITY), "inf");
}
