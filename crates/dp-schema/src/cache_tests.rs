use super::*;

#[test]
fn a_full_disk_is_reported_as_one() {
    let full = std::io::Error::from_raw_os_error(28);
    let access = ErmError::RowCacheAccess(format!("cannot write /c: {full}"));
    let message = cache_error(Path::new("/c"), access, "an encoded row was refused");
    let message = message.to_string();
    assert!(message.contains("No space left on device"), "{message}");
    assert!(!message.contains("refused"), "{message}");
    assert!(
        message.starts_with("the row cache /c: cannot write"),
        "{message}"
    );
    let other = ErmError::EmptyData;
    let message = cache_error(Path::new("/c"), other, "an encoded row was refused");
    assert!(message.to_string().contains("an encoded row was refused"));
}
