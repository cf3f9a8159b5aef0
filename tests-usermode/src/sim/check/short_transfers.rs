//! Short transfers and failed fragments (docs/review.md W12): a host read or write that moves
//! fewer bytes than asked is an error, so a request that met one ends with an error status and
//! reports no bytes (a read never reports bytes the host did not transfer); every successful
//! read reports exactly its length; and once a host write of a request has failed (an error or
//! a short count), no further host write of that request starts (nothing after the failing
//! fragment or segment reaches the medium).

use std::collections::HashMap;
use std::ops::Range;

use crate::sim::host::HostWrite;
use crate::sim::log::{LogEntry, OpKind, DATA_OFFSET, SECTOR};

pub(crate) fn check_short_transfers(
    log: &[LogEntry],
    shorts: &[Range<u64>],
    writes: &[HostWrite],
    violations: &mut Vec<String>,
) {
    for (i, e) in log.iter().enumerate() {
        let (Some(o), None) = (&e.outcome, e.expected) else {
            continue;
        };
        if e.kind == OpKind::Flush {
            continue;
        }
        let bytes = e.sectors * SECTOR;
        let start = DATA_OFFSET + e.first_sector * SECTOR;
        let host = start..start + bytes;
        let short = shorts
            .iter()
            .any(|r| r.start < host.end && host.start < r.end);
        if short && (o.status.is_success() || o.information != 0) {
            violations.push(format!(
                "W12: {:?} {i} (sectors {}..{}) met a short host transfer but ended {:?} with {} bytes",
                e.kind,
                e.first_sector,
                e.first_sector + e.sectors,
                o.status,
                o.information
            ));
        }
        if e.kind == OpKind::Read && o.status.is_success() && o.information as u64 != bytes {
            violations.push(format!(
                "W12: read {i} succeeded reporting {} of its {bytes} bytes",
                o.information
            ));
        }
    }
    // The first failure of each upper write, by the host event at which it ended.
    let mut failed: HashMap<u32, &HostWrite> = HashMap::new();
    for w in writes {
        if w.result != Ok(w.len) {
            let first = failed.entry(w.id).or_insert(w);
            if w.ended < first.ended {
                *first = w;
            }
        }
    }
    for w in writes {
        if let Some(f) = failed.get(&w.id) {
            if w.started > f.ended {
                violations.push(format!(
                    "W12: write id {}: host write at {} ({} bytes) started after its host write at {} failed ({:?})",
                    w.id, w.offset, w.len, f.offset, f.result
                ));
                return;
            }
        }
    }
}
