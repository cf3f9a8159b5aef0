//! Loom models of the engine's concurrency cores, run through `LoomPlatform`.
//!
//! Each model is exhaustive within a preemption bound (set per model, overridable with
//! `LOOM_MAX_PREEMPTIONS`). Run them optimised:
//! `cargo test --release -p vcdirect-usermode --test loom_models -- --nocapture`
//! prints each model's iterations and time.
//!
//! Limits that shaped the models: loom allows 5 threads per execution (finished ones are not
//! reused), so the volume model keeps the gates off (the direct path alone starts 8 workers)
//! and runs work items inline; and loom orders only its own objects, so a plain atomic of the
//! engine (the key's block flag) is invisible to it and the models publish what they assert
//! through loom atomics or locks. The volume model at bound 3 did not finish in 10 minutes.
//!
//! A model that switches one of the engine's fault switches on must find the bug it
//! reintroduces (`#[should_panic]`): it proves the model has teeth. The switches are global,
//! so those models run alone (a write lock over all models).

use std::ops::Range;
use std::sync::atomic::AtomicUsize as StdAtomicUsize;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Mutex;

use vcdirect::barrier::{Access, RangeLock, Ticket};
use vcdirect::completion::{Completer, Finished};
use vcdirect::crypto::{Cipher, CryptoError, CryptoPool, VolumeKey, XtsCipher, DATA_UNIT};
use vcdirect::faults::{set_faults, Fault};
use vcdirect::platform::{Event, Lock, Platform, Rundown, ThreadRole, WorkQueue};
use vcdirect::registry::{Gates, Tunables};
use vcdirect::volume::{MountParams, Volume};
use vcdirect::Status;
use vcdirect_usermode::loom_platform::{
    current_thread_name, LoomEvent, LoomHost, LoomPlatform, WorkItems, SYSTEM_WORKER,
};
use vcdirect_usermode::request::TestRequest;

type Lp = LoomPlatform;

/// Readers: ordinary models. Writer: a model with a fault switch on.
static FAULTS: RwLock<()> = RwLock::new(());

fn lock<T>(m: &Mutex<T>) -> loom::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `model` exhaustively with at most `bound` preemptions and reports the effort.
fn explore(name: &str, bound: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(bound);
    }
    builder.max_branches = 10_000;
    let iterations = Arc::new(StdAtomicUsize::new(0));
    let counter = Arc::clone(&iterations);
    let start = Instant::now();
    builder.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model();
    });
    eprintln!(
        "loom model {name}: preemption bound {:?}, {} executions, {:.2?}",
        builder.preemption_bound,
        iterations.load(std::sync::atomic::Ordering::Relaxed),
        start.elapsed()
    );
}

fn ordinary() -> std::sync::RwLockReadGuard<'static, ()> {
    FAULTS.read().unwrap_or_else(|e| e.into_inner())
}

/// Holds every other model off and switches `faults` on until dropped (also on panic).
struct FaultsOn(#[allow(dead_code)] std::sync::RwLockWriteGuard<'static, ()>);

impl FaultsOn {
    fn new(faults: &[Fault]) -> Self {
        let guard = FAULTS.write().unwrap_or_else(|e| e.into_inner());
        set_faults(faults);
        FaultsOn(guard)
    }
}

impl Drop for FaultsOn {
    fn drop(&mut self) {
        set_faults(&[]);
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Range lock: grants under the volume's lock, hand-off through per-request events.

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
                lock: RangeLock::with_capacity(8),
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
        let event = Arc::new(LoomEvent::new());
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
            assert_eq!(t.lock.disjoint_waits(), 0, "REVIEW.md R12");
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

// ---------------------------------------------------------------------------------------------
// 2. Key erasure under rundown (REVIEW.md R3).

const MASTER: [u8; 64] = {
    let mut k = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        k[i] = (i as u8).wrapping_mul(37).wrapping_add(11);
        i += 1;
    }
    k
};
const UNIT: u64 = 7;

fn plaintext() -> Vec<u8> {
    (0..DATA_UNIT).map(|i| (i * 13 % 251) as u8).collect()
}

/// Loom sees only its own objects: the engine's `erased` flag is a plain atomic, so the model
/// publishes "erase has returned" through a loom atomic that every key user reads while it
/// holds its guard. That read and the store after `erase` are what loom orders both ways.
fn key_erase_model(expected: Arc<Vec<u8>>) {
    let env = Lp::new(WorkItems::Thread);
    let key = Arc::new(VolumeKey::<Lp>::new(&MASTER));
    let erase_returned = Arc::new(AtomicBool::new(false));
    // A user through the encryption pool (the path both engine paths take).
    let pool_user = {
        let (key, env, expected) = (Arc::clone(&key), env.clone(), Arc::clone(&expected));
        loom::thread::spawn(move || {
            let mut buf = plaintext();
            match CryptoPool::inline().run(&env, &key, Cipher::Encrypt, &mut buf, UNIT) {
                Ok(()) => assert_eq!(buf, *expected, "ciphertext with the right key"),
                Err(CryptoError::KeyErased) => assert_eq!(buf, plaintext(), "buffer untouched"),
            }
        })
    };
    // A user holding the guard across a switch point.
    let guard_user = {
        let (key, expected, erase_returned) = (
            Arc::clone(&key),
            Arc::clone(&expected),
            Arc::clone(&erase_returned),
        );
        loom::thread::spawn(move || match key.acquire() {
            Ok(guard) => {
                let mut buf = plaintext();
                guard.cipher().encrypt(&mut buf, UNIT);
                assert!(
                    !erase_returned.load(Ordering::SeqCst),
                    "a key guard is alive after erase returned (REVIEW.md R3)"
                );
                assert_eq!(buf, *expected, "ciphertext with the right key");
            }
            Err(CryptoError::KeyErased) => {}
        })
    };
    // The eraser is a thread of its own: its first step (the block flag, a plain atomic) then
    // happens when loom schedules it, not glued to this thread's last spawn.
    let eraser = {
        let (key, erase_returned) = (Arc::clone(&key), Arc::clone(&erase_returned));
        loom::thread::spawn(move || {
            key.erase();
            erase_returned.store(true, Ordering::SeqCst);
            assert!(key.is_erased() && key.is_blocked());
            assert_eq!(
                key.late_users(),
                0,
                "a key user outlived erase (REVIEW.md R3)"
            );
            assert!(matches!(key.acquire(), Err(CryptoError::KeyErased)));
        })
    };
    pool_user.join().unwrap();
    guard_user.join().unwrap();
    eraser.join().unwrap();
    assert_eq!(
        key.late_users(),
        0,
        "a key user outlived erase (REVIEW.md R3)"
    );
}

fn expected_ciphertext() -> Arc<Vec<u8>> {
    let mut buf = plaintext();
    XtsCipher::new(&MASTER).encrypt(&mut buf, UNIT);
    assert_ne!(buf, plaintext());
    Arc::new(buf)
}

#[test]
fn key_erase_waits_for_users_and_refuses_new_ones() {
    let _g = ordinary();
    let expected = expected_ciphertext();
    explore("key_erase", 3, move || {
        key_erase_model(Arc::clone(&expected))
    });
}

#[test]
#[should_panic(expected = "REVIEW.md R3")]
fn key_erase_model_catches_r3_skipped_rundown() {
    let _f = FaultsOn::new(&[Fault::R3SkipKeyRundown]);
    let expected = expected_ciphertext();
    explore("key_erase_r3_fault", 2, move || {
        key_erase_model(Arc::clone(&expected))
    });
}

// ---------------------------------------------------------------------------------------------
// 3. Completion hand-off: work items, exactly once, bounded (REVIEW.md R1).

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
    let completer = Arc::new(Completer::new(env.clone(), max_work_items));
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

// ---------------------------------------------------------------------------------------------
// 4. Dismount drain: admission rundown + work queue (REVIEW.md R13), then the real volume.

#[derive(Default)]
struct Drain {
    entered: Vec<usize>,
    exited: Vec<usize>,
    closed: bool,
}

fn drain_model() {
    let admitted = Arc::new(Rundown::<Lp>::new());
    let queue = Arc::new(WorkQueue::<Lp, Option<usize>>::with_capacity(4));
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

const VOLUME_SIZE: u64 = 4096;

fn params() -> MountParams {
    MountParams {
        data_offset: 0,
        data_size: VOLUME_SIZE,
        sector_size: 512,
        read_only: false,
        hidden: false,
        protected_range: None,
        gates: Gates::OFF,
        tunables: Tunables {
            fragment_size: 512,
            io_request_count: 1,
            item_count: 1,
            free_cpu_count: 0,
            max_work_items: 1,
        },
    }
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
