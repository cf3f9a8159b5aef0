//! docs/review.md W3: a mount whose n-th engine thread fails to start (PsCreateSystemThread or
//! the thread's impersonation failing) fails with that status and leaves no thread running:
//! the threads started before it are stopped and joined.

mod common;

use std::sync::mpsc;

use common::*;
use vcdirect::volume::Volume;
use vcdirect::Status;
use vcdirect_usermode::std_platform::StdPlatform;

/// STATUS_BAD_IMPERSONATION_LEVEL, as a thread's failed impersonation reports it.
const SPAWN_FAILED: Status = Status::Host(0xC000_00A5);

/// Mounts with `fail_at` (1-based spawn number, None: no fault) on a platform of its own;
/// returns the mount's result and the engine threads alive once it returned. Fails instead of
/// hanging if the mount never returns (a join of a thread nobody stopped).
fn mount_failing_at(fail_at: Option<usize>) -> (Result<Vol, Status>, usize) {
    let p = params(MIB, BOTH_ON);
    let host = host_for(&p);
    let platform: Plat = StdPlatform::new(0);
    assert_eq!(platform.engine_threads_alive(), 0, "before the mount");
    if let Some(n) = fail_at {
        platform.fail_spawn_at(n, SPAWN_FAILED);
    }
    let (tx, rx) = mpsc::channel();
    let probe = platform.clone();
    std::thread::spawn(move || {
        let _ = tx.send(Volume::mount(platform, host, &master_key(), p));
    });
    let result = rx
        .recv_timeout(WAIT)
        .unwrap_or_else(|_| panic!("mount failing at spawn {fail_at:?} did not return"));
    (result, probe.engine_threads_alive())
}

#[test]
fn w3_failed_thread_start_fails_the_mount_and_joins_the_started_threads() {
    // Without a fault every engine thread runs while mounted (so the counter sees them):
    // the completion thread, the legacy path's three and the direct path's eight.
    let (mounted, total) = mount_failing_at(None);
    let vol = mounted.expect("mount without a fault");
    assert!(vol.effective().direct_read && vol.effective().direct_write);
    assert_eq!(total, 12, "engine threads of a mounted volume");
    vol.dismount();
    drop(vol);
    // Every spawn in turn fails: the first (nothing started yet), one inside the legacy
    // path's three, one between the paths, one inside the direct path's eight, the last.
    for n in 1..=total {
        let (result, alive) = mount_failing_at(Some(n));
        assert_eq!(
            result.err(),
            Some(SPAWN_FAILED),
            "spawn {n} failed: the mount fails with its status"
        );
        assert_eq!(alive, 0, "spawn {n} failed: engine threads left running");
    }
}
