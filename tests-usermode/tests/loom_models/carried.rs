//! The carried host permit (docs/design.md §5): a direct worker waits for a job's queue permit,
//! then for a host permit, and only then takes the oldest job (`RequestQueue::wait`,
//! `HostOps::take_for_job`, `RequestQueue::take_waited`), while a completion work item that holds a
//! host permit takes the oldest job without blocking when it is one it may issue
//! (`RequestQueue::try_take_front_if`) and otherwise gives the permit back; a job whose start
//! the host refuses goes back to the FIFO's head (`RequestQueue::push_front_armed`). Every job
//! is taken exactly once, the stop reaches the worker, every permit comes back, and nobody
//! waits forever.

use std::sync::Arc;

use loom::sync::Mutex;

use vcdirect::direct::HostOps;
use vcdirect::faults::Fault;
use vcdirect::platform::{RequestQueue, Taken, UpperRequest};
use vcdirect::Status;
use vcdirect_usermode::loom_platform::{LoomHost, LoomPlatform};
use vcdirect_usermode::request::TestRequest;

use crate::{explore, lock, ordinary, FaultsOn};

type Plat = LoomPlatform<LoomHost>;

/// The job at `offset` is small (a carrier may issue it); the others are not.
const SMALL: i64 = 0;

fn serve(taken: &Mutex<Vec<i64>>, request: TestRequest) {
    lock(taken).push(request.offset());
    request.complete(Status::Success, 0);
}

/// A direct worker: a queue permit, then a host permit, then the oldest job (or the stop).
fn spawn_worker(
    queue: &Arc<RequestQueue<Plat>>,
    ops: &Arc<HostOps<Plat>>,
    taken: &Arc<Mutex<Vec<i64>>>,
) -> loom::thread::JoinHandle<()> {
    let (queue, ops, taken) = (Arc::clone(queue), Arc::clone(ops), Arc::clone(taken));
    loom::thread::spawn(move || loop {
        queue.wait();
        ops.take_for_job();
        match queue.take_waited() {
            Some(Taken::Request(request)) => serve(&taken, request),
            Some(Taken::Stop) => {
                ops.give();
                return;
            }
            None => {}
        }
        ops.give();
    })
}

/// Two jobs queued (a small one, then a large one) and a stop; one worker, with a free host
/// permit of two; this thread is a completion work item carrying the other.
fn carried() {
    let queue = Arc::new(RequestQueue::<Plat>::new().unwrap());
    let ops = Arc::new(HostOps::<Plat>::new(2).unwrap());
    let taken = Arc::new(Mutex::new(Vec::new()));
    // The permit the finished request's work item carries.
    assert!(ops.take_for(0));
    assert!(ops.try_carry(2));
    queue.push(TestRequest::read(SMALL as u64, 512, |_| {}));
    queue.push(TestRequest::read(4096, 512, |_| {}));
    let worker = spawn_worker(&queue, &ops, &taken);
    // The carrier: the oldest job, if it is a small one; the permit goes back either way.
    if ops.use_carried() {
        if let Some(request) = queue.try_take_front_if(|r| r.offset() == SMALL) {
            serve(&taken, request);
        }
        ops.give();
    }
    queue.stop();
    worker.join().unwrap();
    let mut taken = lock(&taken).clone();
    taken.sort_unstable();
    assert_eq!(taken, [SMALL, 4096], "every job taken exactly once");
    assert_eq!(ops.held(), 0, "every host permit given back");
    assert!(queue.is_empty());
}

/// A small job and a large one queued, then a stop; one host permit, which this thread (a
/// completion work item) carries, so the worker waits for it in `take_for_job` after taking a
/// queue permit. The carrier takes the small job, the host refuses its start, and it puts the
/// job back at the FIFO's head before it gives the permit back (`DirectPath::issue_carried`):
/// the worker then takes the small job first, then the large one, in every interleaving.
/// `permit_first` gives the permit back before the job (the order a review found wrong).
fn carried_refused(permit_first: bool) {
    let queue = Arc::new(RequestQueue::<Plat>::new().unwrap());
    let ops = Arc::new(HostOps::<Plat>::new(1).unwrap());
    let taken = Arc::new(Mutex::new(Vec::new()));
    assert!(ops.take_for(0));
    assert!(ops.try_carry(2));
    queue.push(TestRequest::read(SMALL as u64, 512, |_| {}));
    queue.push(TestRequest::read(4096, 512, |_| {}));
    let worker = spawn_worker(&queue, &ops, &taken);
    assert!(
        ops.use_carried(),
        "no worker waits in the middle of a request"
    );
    let request = queue
        .try_take_front_if(|r| r.offset() == SMALL)
        .expect("the worker cannot take a job before the carrier gives the permit");
    // The host refused the start.
    if permit_first {
        ops.give();
    }
    if let Err(request) = queue.push_front_armed(request) {
        panic!("job {} was never cancelled", request.offset());
    }
    if !permit_first {
        ops.give();
    }
    queue.stop();
    worker.join().unwrap();
    assert_eq!(
        *lock(&taken),
        [SMALL, 4096],
        "the job put back is taken before the one queued after it"
    );
    assert_eq!(ops.held(), 0, "every host permit given back");
    assert!(queue.is_empty());
}

#[test]
fn carried_job_the_host_refuses_goes_back_to_the_head_before_its_permit() {
    let _g = ordinary();
    explore("carried permit, start refused", 3, || {
        carried_refused(false)
    });
}

/// Teeth: with the permit given back first, the woken worker may take the large job while
/// the small one is still out, which the model finds.
#[test]
#[should_panic(expected = "the job put back is taken before the one queued after it")]
fn carried_job_put_back_after_its_permit_is_overtaken() {
    let _g = ordinary();
    explore("carried permit, start refused, permit first", 3, || {
        carried_refused(true)
    });
}

#[test]
fn carried_permit_and_worker_take_every_job_once_and_give_every_permit_back() {
    let _g = ordinary();
    explore("carried permit", 3, carried);
}

/// Teeth: a carrier that finds the head not for it and keeps the queue permit it took leaves
/// the worker waiting for the stop forever, which loom reports.
#[test]
#[should_panic(expected = "deadlock")]
fn carrier_keeping_the_queue_permit_leaves_the_worker_waiting() {
    let _f = FaultsOn::new(&[Fault::CarriedCountKept]);
    explore("carried permit, queue permit kept", 3, carried);
}
