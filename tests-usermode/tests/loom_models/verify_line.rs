//! The VERIFYs' line on the real volume (gates off): the cancel of a waiting VERIFY against
//! the hand-over of the next VERIFY by the thread that finishes the one in service.

use std::sync::Arc;

use loom::sync::Mutex;

use vcdirect::faults::Fault;
use vcdirect::volume::Volume;
use vcdirect::Status;
use vcdirect_usermode::loom_platform::{LoomHost, LoomPlatform, WorkItems};
use vcdirect_usermode::request::TestRequest;

use crate::{explore, lock, ordinary, params, FaultsOn, MASTER, VOLUME_SIZE};

/// A VERIFY in service and a second one sent behind it, which the issuer cancels while the
/// legacy threads serve the first: its finisher hands the second its turn (pops it from the
/// line, claims it from its cancel routine) at any point of the cancel routine's run. Whoever
/// wins, exactly one of them gets the waiting VERIFY: it completes exactly once (cancelled,
/// nothing read, whenever its routine ran; else served), the first is served, and the line,
/// the admitted count and the cancel book are empty afterwards.
fn verify_line_model() {
    let env = LoomPlatform::<LoomHost>::new(WorkItems::Inline);
    let volume =
        Volume::mount(env, LoomHost::new(VOLUME_SIZE as usize), &MASTER, params()).expect("mount");
    let first = Arc::new(Mutex::new(Vec::new()));
    let f = Arc::clone(&first);
    volume.dispatch(TestRequest::verify(0, 512, move |c| {
        lock(&f).push((c.status, c.information))
    }));
    let waiting = Arc::new(Mutex::new(Vec::new()));
    let w = Arc::clone(&waiting);
    let request = TestRequest::verify(512, 512, move |c| lock(&w).push((c.status, c.information)));
    let handle = request.cancel_handle();
    volume.dispatch(request);
    let v = Arc::clone(&volume);
    let routine_ran = handle.cancel(move |key| v.cancel(key));
    volume.dismount();
    let first = lock(&first).clone();
    let waiting = lock(&waiting).clone();
    assert_eq!(
        first,
        [(Status::Success, 0)],
        "W10 line model: the VERIFY in service completed {first:?}"
    );
    match waiting[..] {
        [(Status::Cancelled, 0)] => {}
        [(Status::Success, 0)] if !routine_ran => {}
        _ => panic!(
            "W10 line model: the waiting VERIFY completed {waiting:?} (its cancel routine ran: \
             {routine_ran}), not exactly once"
        ),
    }
    assert_eq!(
        volume.verifies_waiting(),
        0,
        "W10 line model: VERIFYs left in the line"
    );
    assert_eq!(volume.in_flight(), 0, "W10 line model: admitted count left");
    assert_eq!(
        volume.open_cancel_handshakes(),
        0,
        "W10 line model: a cancel hand-shake left open"
    );
}

#[test]
fn w10_verify_line_cancel_racing_the_hand_over_completes_once() {
    let _g = ordinary();
    explore("verify_line_cancel", 2, verify_line_model);
}

/// The fault switch `VerifyCancelStaleFlag`: the hand-over pops the waiting VERIFY but leaves
/// its in-line flag set, so a cancel routine that runs between the pop and the claim believes
/// the flag and unlinks a request no longer in the line: the engine's list algorithm, which the
/// kernel's IRP list runs too, stops it with its neighbour check (unchecked, the kernel would
/// corrupt the line and give the IRP a second owner). Loom finds that order.
#[test]
#[should_panic(expected = "a cancel unlinked a request no longer in the line")]
fn w10_verify_line_model_catches_a_stale_in_line_flag() {
    let _f = FaultsOn::new(&[Fault::VerifyCancelStaleFlag]);
    explore("verify_line_stale_flag_fault", 2, verify_line_model);
}
