use super::*;

#[test]
fn only_our_exact_pattern_names_a_process() {
    let pid = |name| stale_pid(name, ".dpml-train-", ".rows", 2);
    assert_eq!(pid(".dpml-train-123-456-0.rows"), Some(123));
    for other in [
        "dpml-train-123-456-0.rows",
        ".dpml-train-123-456-0.rows.bak",
        ".dpml-train-123-456.rows",
        ".dpml-train-123-456-0-1.rows",
        ".dpml-train-12a-456-0.rows",
        ".dpml-train--456-0.rows",
        ".dpml-train-123-456-0.row",
        ".dpml-train-+1-456-0.rows",
    ] {
        assert_eq!(pid(other), None, "{other}");
    }
    let staged = |name| stale_pid(name, ".out.csv.dpml-", ".tmp", 0);
    assert_eq!(staged(".out.csv.dpml-77.tmp"), Some(77));
    assert_eq!(staged(".out.csv.dpml-77-1.tmp"), None);
}

#[test]
fn this_process_exists_and_a_reaped_child_does_not() {
    assert!(process_exists(std::process::id()));
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    assert!(!process_exists(pid));
}

#[test]
fn a_signal_exits_as_a_shell_reports_it() {
    assert_eq!(exit_status(2), 130);
    assert_eq!(exit_status(15), 143);
}
