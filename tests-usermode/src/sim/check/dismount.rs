//! docs/review.md R13 and R3: when dismount returns, no host operation is outstanding and no request
//! is in flight; at the end, no engine thread is left behind, no cancel hand-shake is left open,
//! no crypto user outlived the key erasure, and the keys are erased.

use vcdirect::volume::Volume;

use crate::sim::SimPlatform;

/// R13, right after a `dismount` returned (`when` says which one).
pub(crate) fn check_drained(volume: &Volume<SimPlatform>, when: &str) -> Vec<String> {
    let mut violations = Vec::new();
    if volume.host().outstanding() != 0 {
        violations.push(format!(
            "R13: {} host operations outstanding {when}",
            volume.host().outstanding()
        ));
    }
    if volume.direct_permits_held() != 0 {
        violations.push(format!(
            "direct: {} host permits not given back {when}",
            volume.direct_permits_held()
        ));
    }
    if volume.in_flight() != 0 {
        violations.push(format!(
            "R13: {} requests in flight {when}",
            volume.in_flight()
        ));
    }
    violations
}

/// Cancel hand-shakes, after the final dismount.
pub(crate) fn check_cancel_handshakes(volume: &Volume<SimPlatform>, violations: &mut Vec<String>) {
    if volume.open_cancel_handshakes() != 0 {
        violations.push(format!(
            "cancel: {} hand-shakes left open after dismount (a job parked for a routine that never came, or a key its taker never saw)",
            volume.open_cancel_handshakes()
        ));
    }
}

/// R3 and key erasure, after the final dismount: no crypto user outlived erase, and no round
/// key is left in memory. The latter is the platform's evidence, not the key's erased flag:
/// the cipher's block was released after a wipe that left no round key in it, or is still
/// allocated and wiped in place (`crate::key_blocks`, the same check the std tests make).
pub(crate) fn check_keys(
    volume: &Volume<SimPlatform>,
    platform: &SimPlatform,
    violations: &mut Vec<String>,
) {
    if volume.key().late_users() != 0 {
        violations.push(format!(
            "R3: {} crypto users outlived key erasure",
            volume.key().late_users()
        ));
    }
    if !volume.key().is_erased() {
        violations.push("keys not erased after dismount".into());
    }
    if let Err(v) = platform
        .key_blocks()
        .check_erased(volume.key().block_address())
    {
        violations.push(v);
    }
}

/// R13, for a run shuttle ended as a deadlock (`deadlock` is its message, naming the blocked
/// tasks): if the main thread is not among them, it returned after the final dismount and the
/// blocked ones are engine threads the dismount left behind.
pub(crate) fn check_threads_left(deadlock: &str) -> Option<String> {
    (!deadlock.contains("main-thread"))
        .then(|| format!("R13: threads left blocked after the run ended ({deadlock})"))
}
