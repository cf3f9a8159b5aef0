//! docs/review.md W9: no call above its IRQL contract. The simulated threads keep a virtual
//! IRQL (`crate::irql`, in shuttle thread-locals): spin locks, read/write dispatch and the
//! cancel routine run at DISPATCH_LEVEL; waits, joins, thread starts, synchronous host I/O and
//! buffer mapping check their row of `vcdirect::platform::irql::Call` as they run, and record a
//! violation naming the call and its site ("W9 violation: wait at DISPATCH_LEVEL ... at
//! driver/src/...:line:col") instead of blocking the seed; engine threads and work items must
//! end at PASSIVE_LEVEL. Here the recorded violations join the seed's report.

use crate::irql::{set_mode, take_recorded, Mode};

/// Runs `f` (one seed, on this OS thread) with the virtual IRQL kept per simulated thread and
/// violations recorded; returns what `f` returned and the violations, each starting with
/// "W9 violation:".
pub(crate) fn with_irql_checks<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    let previous = set_mode(Mode::Sim);
    // Left over from a seed that ended in a panic half-way through a check.
    let _ = take_recorded();
    let r = f();
    set_mode(previous);
    let mut violations = take_recorded();
    violations.dedup();
    (r, violations)
}
