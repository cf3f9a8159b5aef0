//! The direct path keeps at most 8 requests and at most 8 host operations in flight (a worker
//! may have several segments of its request at the host at once), and
//! docs/review.md R12: no request ever waits on one whose range does not overlap its own.

use vcdirect::volume::{CounterSnapshot, Volume};

use crate::sim::SimPlatform;

pub(crate) fn check_bounds(
    volume: &Volume<SimPlatform>,
    counters: &CounterSnapshot,
    violations: &mut Vec<String>,
) {
    if counters.direct_in_flight_max > 8 {
        violations.push(format!(
            "direct in flight reached {}",
            counters.direct_in_flight_max
        ));
    }
    // Counted by the simulated host for the operations the direct workers start, and by the
    // engine's cap.
    let host_ops = volume.host().direct_outstanding_max();
    if host_ops > vcdirect::direct::HOST_OPS as u64
        || volume.direct_host_ops_max() > vcdirect::direct::HOST_OPS
    {
        violations.push(format!(
            "direct host operations in flight reached {host_ops} at the host, {} by the cap (cap {})",
            volume.direct_host_ops_max(),
            vcdirect::direct::HOST_OPS
        ));
    }
    if volume.disjoint_waits() != 0 {
        violations.push(format!(
            "R12: {} waits on non-overlapping requests",
            volume.disjoint_waits()
        ));
    }
}
