//! Flushes (docs/review.md R7): a volume without direct writes never sends a flush to the host and
//! completes each flush at once; with direct writes, a successful flush reaches the host only
//! after every write that succeeded before it is on the medium.

use vcdirect::Status;

use crate::sim::log::{LogEntry, OpKind, SECTOR};
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
