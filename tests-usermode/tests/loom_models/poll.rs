//! The hand-off to a polling consumer (`RequestQueue::pop_polling`, issue 23): with one
//! consumer polling and one sleeping on the semaphore, every pushed request is taken exactly
//! once, the stops still end both consumers (nothing is left waiting on a permit that never
//! comes), and at most one request per poll is handed over.

use std::sync::Arc;

use loom::sync::atomic::{AtomicUsize, Ordering};

use vcdirect::platform::{RequestQueue, Taken, UpperRequest};
use vcdirect::Status;
use vcdirect_usermode::loom_platform::{LoomHost, LoomPlatform, WorkItems};
use vcdirect_usermode::request::TestRequest;

use crate::{explore, ordinary};

type Lq = RequestQueue<LoomPlatform<LoomHost>>;

/// Takes requests until a stop; each is completed and counted.
fn consume(queue: &Lq, poll_us: u32, taken: &AtomicUsize) {
    let platform = LoomPlatform::<LoomHost>::new(WorkItems::Inline);
    loop {
        match queue.pop_polling(&platform, poll_us) {
            Taken::Stop => return,
            Taken::Request(r) => {
                r.complete(Status::Success, 0);
                taken.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

#[test]
fn a_polling_and_a_sleeping_consumer_take_every_request_once_and_end_at_their_stops() {
    let _g = ordinary();
    explore("poll hand-off", 2, || {
        let queue = Arc::new(Lq::new().unwrap());
        let taken = Arc::new(AtomicUsize::new(0));
        let consumers: Vec<_> = [30, 30]
            .into_iter()
            .map(|poll_us| {
                let (queue, taken) = (Arc::clone(&queue), Arc::clone(&taken));
                loom::thread::spawn(move || consume(&queue, poll_us, &taken))
            })
            .collect();
        queue.push(TestRequest::read(0, 512, |_| {}));
        queue.push(TestRequest::read(512, 512, |_| {}));
        queue.stop();
        queue.stop();
        for c in consumers {
            c.join().unwrap();
        }
        assert_eq!(taken.load(Ordering::SeqCst), 2);
        assert!(queue.handed() <= 2);
        assert!(queue.is_empty());
        assert!(!queue.polling());
    });
}
