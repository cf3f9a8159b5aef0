//! W6: allocation-failure injection. Every fallible allocation of a mount (the engine's tables
//! and buffers, its boxes and `Arc`s through `Platform::try_box`/`try_arc`, thread bodies
//! included, the platform's work items) fails in turn: the mount fails with
//! STATUS_INSUFFICIENT_RESOURCES, nothing panics, no engine thread is left running, and the
//! next mount serves. A mounted volume asks no fallible allocation at all while it serves
//! requests (there is none on the request path), and the data written is read back.
//!
//! One test: the check that serving asks nothing counts every thread's allocations.

mod common;

use common::*;
use vcdirect::faults::{allocations_seen, allocations_seen_by_all, fail_allocation_at};
use vcdirect::volume::Volume;
use vcdirect::Status;
use vcdirect_usermode::std_platform::StdPlatform;

/// Mounts on this thread (the injection is per thread) on a platform of its own (direct reads
/// and writes, so every buffer kind is made); returns the result and the engine threads alive
/// once it returned.
fn mount() -> (Result<Vol, Status>, usize) {
    let p = params(4 * MIB, BOTH_ON);
    let host = host_for(&p);
    let platform: Plat = StdPlatform::new(0);
    let probe = platform.clone();
    let result = Volume::mount(platform, host, &master_key(), p);
    (result, probe.engine_threads_alive())
}

#[test]
fn w6_each_failed_allocation_fails_the_mount_cleanly_and_serving_asks_none() {
    // How many fallible allocations a mount makes.
    fail_allocation_at(0);
    let (vol, _) = mount();
    let sites = allocations_seen();
    vol.expect("mount without a fault").dismount();
    // Its tables and buffers (24 sites), and since every box and shared value of a mount is
    // fallible too, its `Arc`s (volume, paths, context, key, counters, completion stage),
    // queues and the 12 thread bodies, and its 13 events and semaphores (KEVENT/KSEMAPHORE
    // in pool memory in the kernel: rundowns, queues, permits): 61 on this mount.
    assert!(
        sites >= 55,
        "a mount allocates its tables, buffers, shared values, thread bodies, events and semaphores fallibly ({sites})"
    );

    for n in 1..=sites {
        fail_allocation_at(n);
        let (result, alive) = mount();
        assert_eq!(
            result.err(),
            Some(Status::InsufficientResources),
            "allocation {n} of {sites} failed: the mount fails with that status"
        );
        assert_eq!(
            alive, 0,
            "allocation {n} failed: engine threads left running"
        );
    }

    // A mount that succeeds, then serves.
    fail_allocation_at(0);
    let (vol, _) = mount();
    let vol = vol.expect("the next mount serves");
    let seen_before = allocations_seen_by_all();
    let data = pattern(6, 256 * 1024);
    let mut pending = Vec::new();
    for i in 0..8u64 {
        pending.push(submit_write(&vol, i * 256 * 1024, &data));
    }
    for rx in &pending {
        let c = wait(rx);
        assert_eq!(c.status, Status::Success);
    }
    let flushed = wait(&submit(&vol, |done| {
        vcdirect_usermode::request::TestRequest::flush(done)
    }));
    assert_eq!(flushed.status, Status::Success);
    for i in 0..8u64 {
        let (status, n, bytes) = read(&vol, i * 256 * 1024, 256 * 1024);
        assert_eq!((status, n), (Status::Success, 256 * 1024));
        assert!(bytes == data, "data written is read back");
    }
    assert_eq!(
        allocations_seen_by_all(),
        seen_before,
        "serving requests asks no fallible allocation"
    );
    vol.dismount();
}
