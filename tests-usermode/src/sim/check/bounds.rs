//! The direct path keeps at most 8 requests in flight, and docs/review.md R12: no request ever waits
//! on one whose range does not overlap its own.

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
    if volume.disjoint_waits() != 0 {
        violations.push(format!(
            "R12: {} waits on non-overlapping requests",
            volume.disjoint_waits()
        ));
    }
}
