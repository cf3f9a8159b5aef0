//! Issue 23: an engine thread about to sleep for lack of work polls briefly first
//! (`RequestQueue::pop_polling`, `Platform::poll`; the direct workers, bounded by
//! `VcDirectWorkerPollMicroseconds`). The poll ends at its bound, is refused above
//! PASSIVE_LEVEL (W9), at most one consumer of a queue polls, and a request pushed while one
//! polls is handed to it: it takes it without a permit, so nobody is woken for it.

use std::sync::Arc;
use std::time::Duration;

use vcdirect::platform::irql::Irql;
use vcdirect::platform::{Platform, RequestQueue, Taken, UpperRequest};
use vcdirect::Status;
use vcdirect_usermode::host::StdHost;
use vcdirect_usermode::irql::{self, raised};
use vcdirect_usermode::request::TestRequest;
use vcdirect_usermode::std_platform::StdPlatform;

type P = StdPlatform<StdHost>;

/// Long enough that a test never depends on the poll's timing (it is not a speed check).
const LONG_US: u32 = 20_000_000;

fn request(offset: u64) -> TestRequest {
    TestRequest::read(offset, 512, |_| {})
}

fn offset_of(taken: Taken<TestRequest>) -> i64 {
    match taken {
        Taken::Request(r) => {
            let offset = r.offset();
            r.complete(Status::Success, 0);
            offset
        }
        Taken::Stop => panic!("took a stop, not a request"),
    }
}

/// Waits until a consumer of `queue` polls (or fails the test after a long while).
fn until_polling(queue: &RequestQueue<P>) {
    for _ in 0..20_000 {
        if queue.polling() {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("no consumer started to poll");
}

#[test]
fn poll_ends_at_its_bound_and_returns_as_soon_as_ready() {
    let platform = P::new(0);
    let mut looks = 0u32;
    // Never ready: it looks more than once and still returns (bounded).
    assert!(!platform.poll(2_000, &mut || {
        looks += 1;
        false
    }));
    assert!(looks > 1, "{looks} looks");
    let mut looks = 0u32;
    assert!(platform.poll(LONG_US, &mut || {
        looks += 1;
        looks == 3
    }));
    assert_eq!(looks, 3);
    // A bound of 0 looks once.
    let mut looks = 0u32;
    assert!(!platform.poll(0, &mut || {
        looks += 1;
        false
    }));
    assert_eq!(looks, 1);
}

#[test]
fn w9_a_poll_above_passive_level_is_a_violation() {
    let platform = P::new(0);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        raised(Irql::Dispatch, || platform.poll(LONG_US, &mut || true))
    }));
    assert_eq!(irql::level(), Irql::Passive);
    let panic = outcome.expect_err("a poll at DISPATCH_LEVEL was not reported");
    let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        text.starts_with("W9 violation: wait at DISPATCH_LEVEL"),
        "{text}"
    );
}

#[test]
fn a_polling_consumer_takes_a_request_pushed_meanwhile_without_a_permit() {
    let queue = Arc::new(RequestQueue::<P>::new().unwrap());
    let consumer = {
        let queue = Arc::clone(&queue);
        std::thread::spawn(move || offset_of(queue.pop_polling(&P::new(0), LONG_US)))
    };
    until_polling(&queue);
    queue.push(request(4096));
    assert_eq!(consumer.join().unwrap(), 4096);
    assert_eq!(queue.handed(), 1, "handed to the poller, not by a permit");
    assert!(!queue.polling());
}

#[test]
fn at_most_one_consumer_polls_and_the_others_sleep_for_a_permit() {
    let queue = Arc::new(RequestQueue::<P>::new().unwrap());
    let spawn = |queue: &Arc<RequestQueue<P>>| {
        let queue = Arc::clone(queue);
        std::thread::spawn(move || offset_of(queue.pop_polling(&P::new(0), LONG_US)))
    };
    let first = spawn(&queue);
    until_polling(&queue);
    // The second finds a poller and sleeps on the semaphore instead.
    let second = spawn(&queue);
    std::thread::sleep(Duration::from_millis(20));
    queue.push(request(512));
    queue.push(request(1024));
    let mut got = [first.join().unwrap(), second.join().unwrap()];
    got.sort_unstable();
    assert_eq!(got, [512, 1024]);
    // One request handed over, the other by its permit (at most one poller).
    assert_eq!(queue.handed(), 1);
}

#[test]
fn a_consumer_whose_poll_ended_sleeps_and_still_gets_the_next_request() {
    let queue = Arc::new(RequestQueue::<P>::new().unwrap());
    let consumer = {
        let queue = Arc::clone(&queue);
        std::thread::spawn(move || offset_of(queue.pop_polling(&P::new(0), 1_000)))
    };
    until_polling(&queue);
    // The poll ends (1 ms) and the consumer sleeps; then a request comes.
    while queue.polling() {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(10));
    queue.push(request(2048));
    assert_eq!(consumer.join().unwrap(), 2048);
    assert_eq!(queue.handed(), 0);
}

#[test]
fn a_request_queued_before_the_poll_started_is_taken_and_a_stop_still_ends_the_poller() {
    let platform = P::new(0);
    let queue = RequestQueue::<P>::new().unwrap();
    queue.push(request(512));
    assert_eq!(offset_of(queue.pop_polling(&platform, LONG_US)), 512);
    queue.stop();
    assert!(matches!(queue.pop_polling(&platform, LONG_US), Taken::Stop));
    assert_eq!(queue.handed(), 0);
}
