use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::*;
use crate::ledger_file::read;

fn new_file(dir: &Path, total: f64) -> PathBuf {
    let path = dir.join("ledger.json");
    LedgerFile::create(&path, &Ledger::new("test", total, 0.0).unwrap()).unwrap();
    path
}

fn spend(epsilon: f64) -> Spend {
    Spend::new(epsilon, 0.0, "test", "m")
}

#[test]
fn create_never_replaces_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_file(dir.path(), 1.0);
    let err = LedgerFile::create(&path, &Ledger::new("x", 9.0, 0.0).unwrap()).unwrap_err();
    assert!(err.to_string().contains("cannot create it"), "{err}");
    assert_eq!(read(&path, "l").unwrap().total_epsilon, 1.0);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no leftovers"
    );
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_reaches_the_same_ledger_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_file(dir.path(), 1.0);
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let held = LedgerFile::lock(&path, LockWait::Refuse).unwrap();
    // The lock is the canonical file's, whichever name is used.
    let err = LedgerFile::lock(&link, LockWait::Refuse).unwrap_err();
    assert!(matches!(err, LedgerError::Held { .. }), "{err}");
    drop(held);
    let budget = Budget::open(&link, Duration::from_secs(5)).unwrap();
    budget.charge(spend(0.6)).unwrap();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(read(&path, "l").unwrap().spends.len(), 1);
    assert!(matches!(
        Budget::open(&path, Duration::from_secs(5))
            .unwrap()
            .charge(spend(0.6)),
        Err(LedgerError::Exceeded(_))
    ));
}

#[cfg(unix)]
#[test]
fn a_ledger_with_two_hard_links_is_refused_by_either_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_file(dir.path(), 1.0);
    let hard = dir.path().join("hard.json");
    std::fs::hard_link(&path, &hard).unwrap();
    for name in [&path, &hard] {
        let err = LedgerFile::lock(name, LockWait::Refuse).unwrap_err();
        assert!(matches!(err, LedgerError::Unsafe { .. }), "{err}");
        assert!(err.to_string().contains("2 hard links"), "{err}");
    }
    std::fs::remove_file(&hard).unwrap();
    assert!(LedgerFile::lock(&path, LockWait::Refuse).is_ok());
}

/// Twelve concurrent charges of 0.3 against 1.0 through the file, a symbolic link and a
/// hard link (the review's break: 1.8 spent): exactly three fit, and the hard link is
/// refused outright.
#[cfg(unix)]
#[test]
fn concurrent_charges_through_every_name_never_overspend() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_file(dir.path(), 1.0);
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let names = [path.clone(), link.clone()];
    let barrier = Arc::new(Barrier::new(12));
    let threads: Vec<_> = (0..12)
        .map(|i| {
            let name = names[i % 2].clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                Budget::File {
                    path: name,
                    wait: Duration::from_secs(30),
                }
                .charge(spend(0.3))
            })
        })
        .collect();
    let outcomes: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 3);
    assert!(
        outcomes
            .iter()
            .filter_map(|o| o.as_ref().err())
            .all(|e| matches!(e, LedgerError::Exceeded(_)))
    );
    let ledger = read(&path, "l").unwrap();
    assert_eq!(ledger.spends.len(), 3);
    assert!(ledger.spent() <= 1.0);
    let mut numbers: Vec<_> = ledger.spends.iter().filter_map(|s| s.sequence).collect();
    numbers.sort();
    assert_eq!(numbers, vec![1, 2, 3]);
}

#[test]
fn a_pending_run_is_charged_only_once_noise_may_have_been_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_file(dir.path(), 2.0);
    let charge = Charge {
        epsilon: 1.0,
        delta: 0.0,
    };
    // Refused before any draw: nothing stored, the lock released.
    let pending = Pending::begin(&path, charge).unwrap();
    assert_eq!(pending.settle_failure(false, spend(1.0)).unwrap(), None);
    assert!(read(&path, "l").unwrap().spends.is_empty());
    // Failed after a draw (DP-SGD diverged): charged.
    let pending = Pending::begin(&path, charge).unwrap();
    assert_eq!(pending.settle_failure(true, spend(1.0)).unwrap(), Some(1));
    // Succeeded: recorded in memory for the report, stored after staging.
    let mut pending = Pending::begin(&path, charge).unwrap();
    let (sequence, after) = pending.record(spend(1.0)).unwrap();
    assert_eq!((sequence, after.spends.len()), (2, 2));
    assert_eq!(read(&path, "l").unwrap().spends.len(), 1, "not stored yet");
    pending.store().unwrap();
    assert_eq!(read(&path, "l").unwrap().spent(), 2.0);
    let err = Pending::begin(&path, charge).unwrap_err();
    assert!(matches!(err, LedgerError::Exceeded(_)), "{err}");
}

#[test]
fn a_budget_in_memory_refunds_only_what_it_recorded() {
    let budget = Budget::in_memory(1.0, 0.0).unwrap();
    let first = budget.charge(spend(0.75)).unwrap();
    assert!(budget.charge(spend(0.5)).is_err());
    budget.refund(first).unwrap();
    assert!(budget.refund(first).is_err());
    budget.charge(spend(1.0)).unwrap();
    assert_eq!(budget.snapshot().unwrap().spent(), 1.0);
}
