//! Range lock: grants under the volume's lock, hand-off through per-request events.

use std::ops::Range;
use std::sync::Arc;

use loom::sync::Mutex;

use vcdirect::barrier::{Access, RangeLock, Ticket};
use vcdirect::faults::Fault;
use vcdirect::platform::{Event, Lock, Platform};
use vcdirect_usermode::loom_platform::LoomEvent;

use crate::{explore, lock, ordinary, FaultsOn, Lp};

#[derive(Clone)]
struct Req {
    range: Range<u64>,
    access: Access,
}

fn r(range: Range<u64>) -> Req {
    Req {
        range,
        access: Access::Read,
    }
}

fn w(range: Range<u64>) -> Req {
    Req {
        range,
        access: Access::Write,
    }
}

fn conflicts(a: &Req, b: &Req) -> bool {
    let overlap = a.range.start < b.range.end && b.range.start < a.range.end;
    overlap && (a.access == Access::Write || b.access == Access::Write)
}

/// What the volume keeps under its lock: the range lock and who waits on which ticket.
struct Table {
    lock: RangeLock,
    waiting: Vec<Option<Arc<LoomEvent>>>,
    /// Registered and not released: (request id, registration number).
    live: Vec<(usize, usize)>,
    next_seq: usize,
    /// Registration number of each request.
    seq: Vec<Option<usize>>,
}

/// The checker's view: who is inside its range now, and the order of entries.
#[derive(Default)]
struct Inside {
    now: Vec<usize>,
    entered: Vec<usize>,
}

struct RangeModel {
    reqs: Vec<Req>,
    table: <Lp as Platform>::Lock<Table>,
    inside: Mutex<Inside>,
}

impl RangeModel {
    fn new(reqs: Vec<Req>) -> Self {
        let n = reqs.len();
        RangeModel {
            reqs,
            table: <Lp as Platform>::Lock::new(Table {
                lock: RangeLock::with_capacity(8).expect("range lock tables"),
                waiting: (0..8).map(|_| None).collect(),
                live: Vec::new(),
                next_seq: 0,
                seq: vec![None; n],
            }),
            inside: Mutex::new(Inside::default()),
        }
    }

    /// Registers request `id`, waits for its grant, holds the range, releases it.
    fn run(&self, id: usize) {
        let req = &self.reqs[id];
        let event = Arc::new(LoomEvent::new().unwrap());
        let (ticket, granted, expected) = self.table.with(|t| {
            let seq = t.next_seq;
            t.next_seq += 1;
            let expected = !t
                .live
                .iter()
                .any(|&(other, _)| conflicts(&self.reqs[other], req));
            let (ticket, granted) = t
                .lock
                .register(req.range.clone(), req.access)
                .expect("the pool has room");
            if !granted {
                t.waiting[ticket.index()] = Some(Arc::clone(&event));
            }
            t.live.push((id, seq));
            t.seq[id] = Some(seq);
            (ticket, granted, expected)
        });
        // Disjoint (or read-read) requests never wait; conflicting ones always do.
        assert_eq!(
            granted, expected,
            "request {id} granted at once: {granted}, expected {expected}"
        );
        if !granted {
            event.wait();
        }
        {
            let mut inside = lock(&self.inside);
            for &other in &inside.now {
                assert!(
                    !conflicts(&self.reqs[other], req),
                    "requests {other} and {id} conflict and are both granted"
                );
            }
            inside.now.push(id);
            inside.entered.push(id);
        }
        // The range is held here; the checker's lock is a switch point inside.
        lock(&self.inside).now.retain(|&x| x != id);
        let wake = self.table.with(|t| {
            t.live.retain(|&(x, _)| x != id);
            let mut granted: Vec<Ticket> = Vec::new();
            t.lock.release(ticket, &mut granted);
            granted
                .iter()
                .map(|g| {
                    t.waiting[g.index()]
                        .take()
                        .expect("a granted ticket was waiting")
                })
                .collect::<Vec<_>>()
        });
        for e in wake {
            e.set();
        }
    }

    /// After every thread returned: nothing left, conflicting pairs entered in registration
    /// order, no wait on a disjoint request.
    fn check_done(&self) {
        let seq = self.table.with(|t| t.seq.clone());
        let inside = lock(&self.inside);
        assert_eq!(
            inside.entered.len(),
            self.reqs.len(),
            "every request granted"
        );
        let pos = |id: usize| inside.entered.iter().position(|&x| x == id).unwrap();
        for a in 0..self.reqs.len() {
            for b in 0..self.reqs.len() {
                if a != b && conflicts(&self.reqs[a], &self.reqs[b]) && seq[a] < seq[b] {
                    assert!(
                        pos(a) < pos(b),
                        "request {b} registered after {a} but was granted first"
                    );
                }
            }
        }
        self.table.with(|t| {
            assert_eq!(t.lock.in_flight(), 0);
            assert_eq!(t.lock.disjoint_waits(), 0, "docs/review.md R12");
        });
    }
}

/// `threads[i]` lists the request ids thread i runs, in order (3 threads at most).
fn range_model(reqs: Vec<Req>, threads: Vec<Vec<usize>>) {
    let m = Arc::new(RangeModel::new(reqs));
    let handles: Vec<_> = threads
        .into_iter()
        .map(|ids| {
            let m = Arc::clone(&m);
            loom::thread::spawn(move || {
                for id in ids {
                    m.run(id);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    m.check_done();
}

#[test]
fn range_lock_write_read_write_chain_grants_in_order() {
    let _g = ordinary();
    // 0 and 1 conflict, 1 and 2 conflict, 0 and 2 are disjoint.
    explore("range_lock_chain", 3, || {
        range_model(
            vec![w(0..8), r(4..12), w(8..16)],
            vec![vec![0], vec![1], vec![2]],
        )
    });
}

#[test]
fn range_lock_readers_share_and_disjoint_never_wait() {
    let _g = ordinary();
    // Two overlapping reads share; a write over both waits; a later disjoint write never waits.
    explore("range_lock_readers", 3, || {
        range_model(
            vec![r(0..8), r(4..12), w(0..16), w(64..72)],
            vec![vec![0], vec![1], vec![2, 3]],
        )
    });
}

#[test]
#[should_panic(expected = "granted at once")]
fn range_lock_model_catches_r12_volume_wide_barrier() {
    let _f = FaultsOn::new(&[Fault::R12VolumeWideBarrier]);
    explore("range_lock_r12_fault", 2, || {
        range_model(vec![w(0..8), r(64..72)], vec![vec![0], vec![1]])
    });
}
