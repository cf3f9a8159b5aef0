//! The direct path's cap on host operations in flight (`HostOps`): workers that each keep
//! several segments of a request in flight never exceed the cap, never deadlock (a worker
//! waits for a permit only while it holds none), and give every permit back.

use std::sync::Arc;

use loom::sync::atomic::{AtomicUsize, Ordering};

use vcdirect::direct::HostOps;
use vcdirect::faults::Fault;
use vcdirect_usermode::loom_platform::{LoomHost, LoomPlatform};

use crate::{explore, ordinary, FaultsOn};

type Ops = HostOps<LoomPlatform<LoomHost>>;

/// One worker's request of `segments` host operations, in the shape of the direct path's
/// segment loop: issue while a permit comes (`take_for` with the count it holds), otherwise
/// finish the oldest operation in flight and give its permit back.
fn request(ops: &Ops, in_flight: &AtomicUsize, cap: usize, segments: usize) {
    ops.enter();
    let (mut held, mut issued) = (0usize, 0usize);
    while issued < segments || held > 0 {
        if issued < segments && ops.take_for(held) {
            held += 1;
            issued += 1;
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            assert!(now <= cap, "{now} host operations in flight, cap {cap}");
            continue;
        }
        in_flight.fetch_sub(1, Ordering::SeqCst);
        ops.give();
        held -= 1;
    }
    ops.leave();
}

/// `workers` workers (this thread and `workers - 1` more) each move `segments` segments
/// through a cap of `cap`.
fn cap_model(workers: usize, cap: usize, segments: usize) {
    let ops = Arc::new(Ops::new(cap).unwrap());
    let in_flight = Arc::new(AtomicUsize::new(0));
    let others: Vec<_> = (1..workers)
        .map(|_| {
            let (ops, in_flight) = (Arc::clone(&ops), Arc::clone(&in_flight));
            loom::thread::spawn(move || request(&ops, &in_flight, cap, segments))
        })
        .collect();
    request(&ops, &in_flight, cap, segments);
    for t in others {
        t.join().unwrap();
    }
    assert_eq!(in_flight.load(Ordering::SeqCst), 0);
    assert_eq!(ops.held(), 0, "every permit given back");
    assert!(ops.max_held() <= cap);
    // Every permit is free again: a worker holding none takes `cap` of them without waiting.
    for held in 0..cap {
        assert!(ops.take_for(held), "permit {held} of {cap} free");
    }
}

#[test]
fn host_ops_three_workers_cap_two_never_exceed_nor_deadlock() {
    let _g = ordinary();
    explore("host_ops_3x3_cap_2", 3, || cap_model(3, 2, 3));
}

#[test]
fn host_ops_two_workers_cap_two_each_wanting_two() {
    let _g = ordinary();
    explore("host_ops_2x2_cap_2", 3, || cap_model(2, 2, 2));
}

/// Teeth: a worker that waits for a second permit while holding one deadlocks with another
/// doing the same (each holds one of the two permits), which loom reports.
#[test]
#[should_panic(expected = "deadlock")]
fn host_ops_waiting_while_holding_deadlocks() {
    let _g = FaultsOn::new(&[Fault::CapWaitWhileHolding]);
    explore("host_ops_wait_while_holding", 3, || cap_model(2, 2, 2));
}

/// A carried permit and a worker in the middle of a request that waits for one (docs/review.md
/// R12): once that worker waits, the carrier may not use the permit (`use_carried` hands it
/// over), so a stream of carried permits cannot starve it. The worker holds none and asks;
/// this thread carries the only one.
fn carried_yields_to_waiter() {
    let ops = Arc::new(Ops::new(1).unwrap());
    assert!(ops.take_for(0));
    assert!(
        ops.try_carry(5),
        "nobody waits yet: the permit may be carried"
    );
    let worker = {
        let ops = Arc::clone(&ops);
        loom::thread::spawn(move || {
            assert!(ops.take_for(0));
            ops.give();
        })
    };
    // Only this thread hands permits over, so a waiter seen here still waits below.
    let waiting = ops.waiting_mid_request();
    let used = ops.use_carried();
    assert!(
        !(used && waiting > 0),
        "a carried permit was used while a worker in the middle of a request waited"
    );
    if used {
        ops.give();
    }
    worker.join().unwrap();
    assert_eq!(ops.held(), 0, "every permit given back");
}

#[test]
fn host_ops_carried_permit_goes_to_a_worker_waiting_mid_request() {
    let _g = ordinary();
    explore("host_ops_carried_yields", 3, carried_yields_to_waiter);
}

/// Teeth: a carrier that ignores the waiting worker uses the permit (fault switch
/// `CarriedPassesWaiter`), which the model sees.
#[test]
#[should_panic(expected = "used while a worker in the middle of a request waited")]
fn host_ops_carrier_passing_a_waiting_worker_is_found() {
    let _g = FaultsOn::new(&[Fault::CarriedPassesWaiter]);
    explore(
        "host_ops_carried_passes_waiter",
        3,
        carried_yields_to_waiter,
    );
}
