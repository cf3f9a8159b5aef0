//! `vcbench lock`: cost of one register + release in the range lock with 1, 8 and 64
//! unrelated (non-overlapping) requests already in flight (issue: logarithmic at most).

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use vcdirect::barrier::{Access, RangeLock};

/// Nanoseconds per register+release pair with `in_flight` disjoint entries held.
pub fn ns_per_pair(in_flight: usize, time: Duration) -> f64 {
    let mut lock = RangeLock::with_capacity(in_flight + 1).expect("range lock tables");
    let mut held = Vec::with_capacity(in_flight);
    // Unrelated requests spread over a 1 GiB volume.
    for i in 0..in_flight as u64 {
        let start = i * (1 << 24);
        held.push(lock.register(start..start + 4096, Access::Write).unwrap());
    }
    let mut granted = Vec::new();
    let mut pairs = 0u64;
    let mut offset = 4096u64;
    let t = Instant::now();
    while t.elapsed() < time {
        for _ in 0..1024 {
            // A request that overlaps none of them, at a moving offset between them.
            offset = (offset + (1 << 24) + 8192) % (in_flight.max(1) as u64 * (1 << 24));
            let start = offset / (1 << 24) * (1 << 24) + 8192;
            let (ticket, ok) = lock.register(start..start + 4096, Access::Read).unwrap();
            debug_assert!(ok);
            lock.release(ticket, &mut granted);
            pairs += 1;
        }
    }
    t.elapsed().as_nanos() as f64 / pairs as f64
}

/// Runs and prints the lock benchmark; returns its JSON.
pub fn run() -> Value {
    println!("range lock: one register + release with N unrelated requests in flight");
    let mut rows = Vec::new();
    for n in [1usize, 8, 64, 256] {
        let ns = ns_per_pair(n, Duration::from_millis(400));
        println!("  {n:>4} in flight: {ns:7.1} ns");
        rows.push(json!({"in_flight": n, "ns_per_register_release": ns}));
    }
    json!({ "range_lock": rows })
}
