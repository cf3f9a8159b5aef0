//! The checks of completions_and_request_ownership.rs and key_erasure_and_dismount.rs can
//! fail: with the engine's test-only fault switches re-introducing the reviewed bugs, the same
//! observations show them. The switches are global, so this binary has a single test that sets
//! them one at a time.

mod common;

use std::sync::mpsc;
use std::sync::Arc;

use common::*;
use vcdirect::faults::{set_faults, Fault};
use vcdirect::platform::irql::Irql;
use vcdirect::platform::HostLimits;
use vcdirect::Status;
use vcdirect_usermode::host::MemoryHost;
use vcdirect_usermode::request::TestRequest;

#[test]
fn reintroduced_r1_and_r2_bugs_are_visible_to_the_checks() {
    // A System thread (a file system's or server's worker): the dispatching thread may issue.
    vcdirect_usermode::security::set_caller(vcdirect_usermode::security::Caller::System);
    // R1: completion on an engine thread shows in the completing thread's name.
    set_faults(&[Fault::R1CompleteOnEngineThread]);
    let p = params(MIB, BOTH_ON);
    let vol = mount(host_for(&p), p);
    // At DISPATCH_LEVEL a worker serves it; at PASSIVE_LEVEL the dispatching thread issues it
    // and finishes it (the memory host completes inside the start). Either way the bug runs
    // the completion right there, where the R1 checks see it: not a system worker.
    for level in [Irql::Dispatch, Irql::Passive] {
        let (tx, rx) = mpsc::channel();
        vcdirect_usermode::irql::dispatch_at(
            level,
            &vol,
            TestRequest::read(0, 4096, move |c| {
                let _ = tx.send((c.status, thread_name()));
            }),
        );
        let (status, on) = rx.recv_timeout(WAIT).expect("completed");
        assert_eq!(status, Status::Success);
        match level {
            Irql::Dispatch => assert!(
                on.starts_with("vc-"),
                "with the R1 bug the completion ran on {on}"
            ),
            _ => assert_ne!(on, "system-worker", "with the R1 bug"),
        }
    }
    assert_eq!(vol.counters.snapshot().dispatch_issued, 1);
    set_faults(&[]);
    vol.dismount();

    // R2: with the block flag checked only once per request, the legacy I/O thread still
    // writes the second 64 KiB fragment (already encrypted by the main thread) after the
    // keys were blocked. (On the direct path the key rundown of R3 stops it anyway.)
    set_faults(&[Fault::R2CheckBlockOnce]);
    let size = MIB;
    let p = with_fragment(params(size, BOTH_OFF), 64 * 1024);
    let host = ProbeHost::new(MemoryHost::new(DATA_OFFSET + size).with_limits(HostLimits {
        max_transfer: 64 * 1024,
        ..HostLimits::unlimited()
    }));
    let vol = mount(host.clone(), p);
    let weak = Arc::downgrade(&vol);
    host.set_hook(true, move || {
        let v = weak.upgrade().expect("volume");
        // Let the main thread start encrypting the second fragment first (one key use per
        // fragment): the erase below then waits for that encryption, and only the I/O
        // thread's own check could still stop the fragment. A sleep is not enough on a
        // loaded machine.
        wait_for("the second fragment's encryption started", || {
            v.key().uses() >= 2
        });
        let e = Arc::clone(&v);
        std::thread::spawn(move || e.erase_keys());
        while !v.key().is_blocked() {
            std::thread::yield_now();
        }
    });
    let c = wait(&submit_write(&vol, 0, &pattern(1, 128 * 1024)));
    let writes = host.ops().iter().filter(|o| o.write).count();
    set_faults(&[]);
    assert_eq!(
        writes, 2,
        "with the R2 bug the second fragment goes out ({:?})",
        c.status
    );
    vol.dismount();
}
