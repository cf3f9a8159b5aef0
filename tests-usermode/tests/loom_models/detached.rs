//! The hand-off of a request issued without a waiter (`vcdirect::direct::Handoff`, the detached
//! slots of `driver/src/direct/detached.rs`): the issuer parks the request and its buffer after
//! its start returned, the host reports the end in its completion context, in either order or
//! at once; exactly one of them gets the request, whole (request, buffer and report), to
//! finish.

use std::sync::Arc;

use loom::sync::Mutex;

use vcdirect::direct::{HandedOver, Handoff};
use vcdirect::faults::Fault;
use vcdirect::platform::UpperRequest;
use vcdirect::Status;
use vcdirect_usermode::loom_platform::LoomPlatform;
use vcdirect_usermode::request::{Buf, TestRequest};

use crate::{explore, lock, ordinary, FaultsOn};

type Plat = LoomPlatform;
type Finished = Mutex<Vec<(bool, bool, Option<Result<usize, Status>>)>>;

fn record(finished: &Finished, h: HandedOver<TestRequest>) {
    lock(finished).push((h.request.is_some(), h.buf.is_some(), h.result));
    if let Some(request) = h.request {
        request.complete(Status::Success, 0);
    }
}

/// One request: the host reports on its own thread while the issuer parks.
fn handoff() {
    let slots = Arc::new(Handoff::<Plat>::new().unwrap());
    let finished: Arc<Finished> = Arc::new(Mutex::new(Vec::new()));
    let index = slots.reserve().expect("a free slot");
    let host = {
        let (slots, finished) = (Arc::clone(&slots), Arc::clone(&finished));
        loom::thread::spawn(move || {
            if let Some(h) = slots.ended(index, Ok(512)) {
                record(&finished, h);
            }
        })
    };
    let request = TestRequest::read(0, 512, |_| {});
    if let Some(h) = slots.started(index, request, Buf::zeroed_aligned(512, 512)) {
        record(&finished, h);
    }
    host.join().unwrap();
    let finished = lock(&finished);
    assert_eq!(
        finished.as_slice(),
        &[(true, true, Some(Ok(512)))],
        "finished exactly once, whole"
    );
    // The slot is free again.
    assert_eq!(slots.reserve(), Some(index));
}

#[test]
fn detached_request_is_finished_once_whole_whoever_comes_second() {
    let _guard = ordinary();
    explore("detached hand-off", 3, handoff);
}

/// With the report finishing a request not parked yet, the issuer's request has nowhere to go:
/// it is dropped without being completed (a lost request), which the test request reports.
#[test]
#[should_panic(expected = "dropped without being completed")]
fn detached_report_finishing_an_unparked_request_is_found() {
    let _faults = FaultsOn::new(&[Fault::DetachedReportBeforePark]);
    explore("detached hand-off, report before park", 3, handoff);
}
