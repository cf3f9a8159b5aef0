//! Completion hand-off: work items, exactly once, bounded (docs/review.md R1); a finishing
//! thread queues its own work item only when one is free and nobody waits.

use std::sync::Arc;

use loom::sync::atomic::{AtomicUsize, Ordering};

use vcdirect::completion::{Completer, Finished};
use vcdirect::faults::Fault;
use vcdirect::platform::{Platform, ThreadRole};
use vcdirect::Status;
use vcdirect_usermode::loom_platform::{current_thread_name, WorkItems, SYSTEM_WORKER};
use vcdirect_usermode::request::TestRequest;

use crate::{explore, ordinary, FaultsOn, Lp};

struct Tracker {
    completed: [AtomicUsize; 2],
    active: AtomicUsize,
    max: usize,
}

fn tracked_request(t: &Arc<Tracker>, i: usize) -> Finished<TestRequest> {
    let t = Arc::clone(t);
    let request = TestRequest::flush(move |c| {
        assert_eq!(
            current_thread_name(),
            SYSTEM_WORKER,
            "upper completion ran on an engine thread"
        );
        assert_eq!(c.status, Status::Success);
        let now = t.active.fetch_add(1, Ordering::SeqCst) + 1;
        assert!(now <= t.max, "{now} work items active, bound {}", t.max);
        t.completed[i].fetch_add(1, Ordering::SeqCst);
        t.active.fetch_sub(1, Ordering::SeqCst);
    });
    Finished {
        request,
        status: Status::Success,
        information: 0,
    }
}

fn completion_model(max_work_items: u32) {
    let env = Lp::new(WorkItems::Thread);
    let completer = Arc::new(Completer::new(&env, max_work_items).expect("work items"));
    let tracker = Arc::new(Tracker {
        completed: [AtomicUsize::new(0), AtomicUsize::new(0)],
        active: AtomicUsize::new(0),
        max: max_work_items as usize,
    });
    let thread = {
        let c = Arc::clone(&completer);
        env.spawn(ThreadRole::Completion, Box::new(move || c.run()))
            .expect("spawn")
    };
    // Two producers: another engine thread and this one (loom allows 5 threads: this one, the
    // producer, the completion thread and one system worker per request).
    let producer = {
        let (c, t) = (Arc::clone(&completer), Arc::clone(&tracker));
        loom::thread::spawn(move || c.push(tracked_request(&t, 0)))
    };
    completer.push(tracked_request(&tracker, 1));
    producer.join().unwrap();
    completer.stop();
    vcdirect::platform::Thread::join(thread);
    completer.wait_idle();
    for (i, c) in tracker.completed.iter().enumerate() {
        assert_eq!(c.load(Ordering::SeqCst), 1, "request {i} completed once");
    }
    assert_eq!(completer.completed(), 2);
}

#[test]
fn completion_bound_one_completes_each_once_on_system_workers() {
    let _g = ordinary();
    explore("completion_bound_1", 3, || completion_model(1));
}

#[test]
fn completion_bound_two_completes_each_once_on_system_workers() {
    let _g = ordinary();
    explore("completion_bound_2", 2, || completion_model(2));
}

#[test]
#[should_panic(expected = "engine thread")]
fn completion_model_catches_r1_completion_on_engine_thread() {
    let _f = FaultsOn::new(&[Fault::R1CompleteOnEngineThread]);
    explore("completion_r1_fault", 1, || completion_model(1));
}

/// One finishing thread hands three requests to a stage with one work item: whichever queued
/// each work item (the finisher itself, or the completion thread once the previous routine
/// returned), they complete in the order they were handed over, one at a time, each once, on
/// system workers (5 threads: this one, the completion thread, a system worker per request).
fn completion_order_model() {
    let env = Lp::new(WorkItems::Thread);
    let completer = Arc::new(Completer::new(&env, 1).expect("work items"));
    let order = Arc::new(loom::sync::Mutex::new(Vec::new()));
    let thread = {
        let c = Arc::clone(&completer);
        env.spawn(ThreadRole::Completion, Box::new(move || c.run()))
            .expect("spawn")
    };
    for i in 0..3usize {
        let order = Arc::clone(&order);
        completer.push(Finished {
            request: TestRequest::flush(move |_| {
                assert_eq!(current_thread_name(), SYSTEM_WORKER, "engine thread");
                crate::lock(&order).push(i);
            }),
            status: Status::Success,
            information: 0,
        });
    }
    completer.stop();
    vcdirect::platform::Thread::join(thread);
    completer.wait_idle();
    assert_eq!(
        *crate::lock(&order),
        [0, 1, 2],
        "completions overtook each other"
    );
    assert_eq!(completer.completed(), 3);
    assert!(completer.is_idle());
}

#[test]
fn completion_finisher_hand_off_keeps_order_and_bound() {
    let _g = ordinary();
    explore("completion_order", 3, completion_order_model);
}

#[test]
#[should_panic(expected = "overtook")]
fn completion_model_catches_a_finisher_overtaking_waiting_requests() {
    let _f = FaultsOn::new(&[Fault::CompletionOvertakes]);
    explore(
        "completion_order_overtakes_fault",
        2,
        completion_order_model,
    );
}
