//! Dismount drain: admission rundown + work queue (docs/review.md R13), then the real volume.

use std::sync::Arc;

use loom::sync::Mutex;

use vcdirect::crypto::DATA_UNIT;
use vcdirect::platform::{Rundown, WorkQueue};
use vcdirect::volume::Volume;
use vcdirect::Status;
use vcdirect_usermode::loom_platform::{LoomHost, LoomPlatform, WorkItems};
use vcdirect_usermode::request::TestRequest;

use crate::{
    expected_ciphertext, explore, lock, ordinary, params, plaintext, Lp, MASTER, UNIT, VOLUME_SIZE,
};

#[derive(Default)]
struct Drain {
    entered: Vec<usize>,
    exited: Vec<usize>,
    closed: bool,
}

fn drain_model() {
    let admitted = Arc::new(Rundown::<Lp>::new().unwrap());
    let queue = Arc::new(WorkQueue::<Lp, Option<usize>>::with_capacity(4).expect("queue"));
    let state = Arc::new(Mutex::new(Drain::default()));
    let submitters: Vec<_> = (0..2)
        .map(|i| {
            let (admitted, queue, state) = (
                Arc::clone(&admitted),
                Arc::clone(&queue),
                Arc::clone(&state),
            );
            loom::thread::spawn(move || {
                if admitted.enter() {
                    {
                        let mut s = lock(&state);
                        assert!(!s.closed, "request {i} entered after the drain returned");
                        s.entered.push(i);
                    }
                    queue.push(Some(i));
                }
            })
        })
        .collect();
    let worker = {
        let (admitted, queue, state) = (
            Arc::clone(&admitted),
            Arc::clone(&queue),
            Arc::clone(&state),
        );
        loom::thread::spawn(move || {
            while let Some(i) = queue.pop() {
                lock(&state).exited.push(i);
                admitted.exit();
            }
        })
    };
    admitted.close_and_wait();
    {
        let mut s = lock(&state);
        let mut entered = s.entered.clone();
        let mut exited = s.exited.clone();
        entered.sort_unstable();
        exited.sort_unstable();
        assert_eq!(
            entered, exited,
            "every entered request exited before the drain returned"
        );
        s.closed = true;
    }
    assert!(!admitted.enter(), "admission closed");
    assert_eq!(admitted.active(), 0);
    queue.push(None);
    for s in submitters {
        s.join().unwrap();
    }
    worker.join().unwrap();
}

#[test]
fn drain_waits_for_every_entered_request_and_admits_none_after() {
    let _g = ordinary();
    explore("drain_rundown_work_queue", 3, drain_model);
}

/// The real volume with gates off (legacy queue): this thread, the completion thread and the
/// legacy queue's three threads are loom's 5; work items run inline on the completion thread.
fn volume_model(expected: Arc<Vec<u8>>) {
    let env = LoomPlatform::<LoomHost>::new(WorkItems::Inline);
    let volume =
        Volume::mount(env, LoomHost::new(VOLUME_SIZE as usize), &MASTER, params()).expect("mount");
    let statuses = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&statuses);
    volume.dispatch(TestRequest::write(
        UNIT * DATA_UNIT as u64,
        &plaintext(),
        move |c| lock(&s).push(c.status),
    ));
    volume.dismount();
    assert_eq!(
        *lock(&statuses),
        vec![Status::Success],
        "the admitted write completed once before dismount returned"
    );
    assert!(volume.key().is_erased());
    assert_eq!(volume.key().late_users(), 0);
    assert_eq!(volume.in_flight(), 0);
    let at = (UNIT as usize) * DATA_UNIT;
    assert_eq!(
        volume.host().snapshot()[at..at + DATA_UNIT],
        expected[..],
        "the write reached the host encrypted"
    );
    let s = Arc::clone(&statuses);
    volume.dispatch(TestRequest::read(0, 512, move |c| lock(&s).push(c.status)));
    assert_eq!(
        *lock(&statuses),
        vec![Status::Success, Status::DeviceNotReady],
        "refused after dismount"
    );
}

#[test]
fn volume_legacy_write_then_dismount_drains_and_erases() {
    let _g = ordinary();
    let expected = expected_ciphertext();
    explore("volume_legacy_dismount", 2, move || {
        volume_model(Arc::clone(&expected))
    });
}
