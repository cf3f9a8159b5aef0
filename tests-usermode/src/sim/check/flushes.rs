//! Flushes (docs/review.md R7): a volume without direct writes never sends a flush to the host and
//! completes each flush at once; with direct writes, a successful flush reaches the host only
//! after every write that succeeded before it is on the medium, and a host flush that failed
//! fails the upper flush it served with its status.

use vcdirect::Status;

use crate::sim::log::{LogEntry, OpKind, SECTOR};
use crate::sim::workload::FLUSH_FAILURE;
use crate::sim::SimHost;

pub(crate) fn check_flushes(
    log: &[LogEntry],
    host: &SimHost,
    direct_write: bool,
    violations: &mut Vec<String>,
) {
    let snapshots = host.flush_snapshots();
    if !direct_write {
        if !snapshots.is_empty() {
            violations.push("R7: a volume without direct writes sent a flush to the host".into());
        }
        for (i, e) in log.iter().enumerate() {
            if e.kind == OpKind::Flush
                && e.outcome.as_ref().map(|o| o.status) != Some(Status::Success)
            {
                violations.push(format!(
                    "flush {i} on a legacy-flush volume did not succeed at once"
                ));
            }
        }
        return;
    }
    let mut k = 0;
    for (i, e) in log.iter().enumerate() {
        if e.kind != OpKind::Flush || e.outcome.as_ref().map(|o| o.status) != Some(Status::Success)
        {
            continue;
        }
        let Some(snap) = snapshots.get(k) else {
            violations.push(format!("flush {i} succeeded without a host flush"));
            return;
        };
        k += 1;
        for w in &log[..i] {
            let ok = w.outcome.as_ref().is_some_and(|o| o.status.is_success());
            if w.kind == OpKind::Write && ok && w.expected.is_none() {
                let got = snap.get(&w.id).copied().unwrap_or(0);
                if got < w.sectors * SECTOR {
                    violations.push(format!(
                        "flush {i} reached the host before write {} (id {}) was on the medium",
                        w.first_sector, w.id
                    ));
                    return;
                }
            }
        }
    }
}

/// Every failed host flush reached its upper flush: as many upper flushes completed with the
/// injected failure's status as host flushes failed (one upper flush, one host flush: the
/// workload sends one flush at a time). A path that reports a failed host flush as success
/// tells the caller its writes are durable when they may not be.
pub(crate) fn check_flush_failures(
    log: &[LogEntry],
    failed_host_flushes: u64,
    violations: &mut Vec<String>,
) {
    let reported = log
        .iter()
        .filter(|e| {
            e.kind == OpKind::Flush && e.outcome.as_ref().map(|o| o.status) == Some(FLUSH_FAILURE)
        })
        .count() as u64;
    if reported != failed_host_flushes {
        violations.push(format!(
            "flush error lost: the host failed {failed_host_flushes} flushes, {reported} upper flushes reported the failure"
        ));
    }
}
