//! The cancel hand-shake on the real volume (gates off).

use std::sync::Arc;

use loom::sync::Mutex;

use vcdirect::crypto::DATA_UNIT;
use vcdirect::volume::Volume;
use vcdirect::Status;
use vcdirect_usermode::loom_platform::{LoomHost, LoomPlatform, WorkItems};
use vcdirect_usermode::request::TestRequest;

use crate::{
    expected_ciphertext, explore, lock, ordinary, params, plaintext, MASTER, UNIT, VOLUME_SIZE,
};

/// The cancel hand-shake on the real volume (gates off): the issuer cancels a write while the
/// legacy main thread may be taking it. Whoever wins, the write completes exactly once: either
/// cancelled with nothing on the medium, or served with its ciphertext there.
fn cancel_model(expected: Arc<Vec<u8>>) {
    let env = LoomPlatform::<LoomHost>::new(WorkItems::Inline);
    let volume =
        Volume::mount(env, LoomHost::new(VOLUME_SIZE as usize), &MASTER, params()).expect("mount");
    let statuses = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&statuses);
    let request = TestRequest::write(UNIT * DATA_UNIT as u64, &plaintext(), move |c| {
        lock(&s).push(c.status)
    });
    let handle = request.cancel_handle();
    volume.dispatch(request);
    let v = Arc::clone(&volume);
    let routine_ran = handle.cancel(move |key| v.cancel(key));
    volume.dismount();
    let got = lock(&statuses).clone();
    let at = (UNIT as usize) * DATA_UNIT;
    let medium = volume.host().snapshot()[at..at + DATA_UNIT].to_vec();
    match got[..] {
        [Status::Success] => {
            assert_eq!(medium, expected[..], "a served write is on the medium");
        }
        [Status::Cancelled] => {
            assert!(
                medium.iter().all(|b| *b == 0),
                "a cancelled write issued nothing"
            );
        }
        _ => panic!("completed {got:?} (routine ran: {routine_ran})"),
    }
    if routine_ran {
        assert_eq!(
            got,
            [Status::Cancelled],
            "the routine ran on a queued write"
        );
    }
    assert_eq!(volume.in_flight(), 0);
    assert_eq!(
        volume.open_cancel_handshakes(),
        0,
        "a cancel hand-shake left open"
    );
}

#[test]
fn cancel_racing_with_the_main_thread_completes_once() {
    let _g = ordinary();
    let expected = expected_ciphertext();
    explore("volume_cancel", 2, move || {
        cancel_model(Arc::clone(&expected))
    });
}
