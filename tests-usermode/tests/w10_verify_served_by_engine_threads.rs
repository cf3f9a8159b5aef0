//! W6, W10, W11: IOCTL_DISK_VERIFY is served by the engine, in turn with the volume's I/O, on
//! both paths: a VERIFY sent while all 8 direct workers (or the legacy I/O thread) are busy
//! waits its turn, reads nothing meanwhile, is then read on an engine thread as the mounting
//! user (R11) into a buffer allocated at mount (nothing is allocated to serve it: the counting
//! allocator of w6_no_allocation_per_request.rs), counts as a read in its path's counters,
//! and completes through the completion stage on a system worker (R1). The fault switch
//! `VerifyOnCallerThread` (the old way: a synchronous host read on the sender's thread) makes
//! the thread check fail. Its cap, errors, cancellation and the dismount drain:
//! w10_verify_cap_errors_cancel_and_dismount.rs.
// A global allocator is an unsafe trait; this test binary is its only user.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use vcdirect::faults::{set_faults, Fault};
use vcdirect::platform::irql::Irql;
use vcdirect::platform::{Detached, HostDevice, HostKind, HostLimits, KeptRead, Origin};
use vcdirect::registry::Gates;
use vcdirect::volume::{CounterSnapshot, Volume};
use vcdirect::Status;
use vcdirect_usermode::host::{MemoryHost, ReadyIo};
use vcdirect_usermode::irql::dispatch_at;
use vcdirect_usermode::mount::mount_params;
use vcdirect_usermode::request::{Completion, TestRequest};
use vcdirect_usermode::security::{self, Context};
use vcdirect_usermode::std_platform::StdPlatform;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
/// Size of the last allocation counted (a hint at what it was, for a failure's message).
static LAST: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: every call is forwarded to the system allocator unchanged; the counter is an atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            LAST.store(layout.size(), Ordering::Relaxed);
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            LAST.store(layout.size(), Ordering::Relaxed);
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            LAST.store(new_size, Ordering::Relaxed);
        }
        // SAFETY: forwarded with the caller's pointer, layout and size.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const DATA_OFFSET: u64 = 128 * 1024;
const SIZE: u64 = 8 << 20;
/// The host's maximum transfer, and the legacy fragment size: a 1 MiB VERIFY is 8 host reads
/// on either path (the direct worker's bounce buffer has 4 windows of 128 KiB: two rounds).
const PIECE: u32 = 128 * 1024;
const VERIFY_AT: u64 = 2 << 20;
const VERIFY_LEN: u32 = 1 << 20;
/// The reads that keep the path busy: one per direct worker.
const BUSY: usize = 8;
const WAIT: Duration = Duration::from_secs(60);

const DIRECT: Gates = Gates {
    read: true,
    write: true,
};

/// A memory medium whose operations block while it is held, and that records, for the host
/// reads inside one byte range, which kind of thread started them and in which security
/// context, without allocating.
struct VerifyHost {
    mem: MemoryHost,
    held: Mutex<bool>,
    released: Condvar,
    /// Operations waiting at the gate now.
    blocked: AtomicUsize,
    watch: Mutex<Range<u64>>,
    /// Reads in `watch` started by the paths' I/O threads, by any other thread, and not as the
    /// mounting user; bytes asked by them.
    on_engine: AtomicU64,
    elsewhere: AtomicU64,
    not_mounting_user: AtomicU64,
    watched_bytes: AtomicU64,
}

impl VerifyHost {
    fn new(mem: MemoryHost) -> Self {
        VerifyHost {
            mem,
            held: Mutex::new(false),
            released: Condvar::new(),
            blocked: AtomicUsize::new(0),
            watch: Mutex::new(0..0),
            on_engine: AtomicU64::new(0),
            elsewhere: AtomicU64::new(0),
            not_mounting_user: AtomicU64::new(0),
            watched_bytes: AtomicU64::new(0),
        }
    }
    fn hold(&self) {
        *self.held.lock().unwrap() = true;
    }
    fn release(&self) {
        *self.held.lock().unwrap() = false;
        self.released.notify_all();
    }
    fn watch(&self, range: Range<u64>) {
        *self.watch.lock().unwrap() = range;
        for c in [
            &self.on_engine,
            &self.elsewhere,
            &self.not_mounting_user,
            &self.watched_bytes,
        ] {
            c.store(0, Ordering::SeqCst);
        }
    }
    /// (reads on engine threads, reads elsewhere, reads not as the mounting user, bytes).
    fn watched(&self) -> (u64, u64, u64, u64) {
        (
            self.on_engine.load(Ordering::SeqCst),
            self.elsewhere.load(Ordering::SeqCst),
            self.not_mounting_user.load(Ordering::SeqCst),
            self.watched_bytes.load(Ordering::SeqCst),
        )
    }
    fn read_starts(&self, offset: u64, len: usize) {
        let watch = self.watch.lock().unwrap().clone();
        if offset < watch.end && watch.start < offset + len as u64 {
            let thread = std::thread::current();
            let name = thread.name().unwrap_or("");
            let engine = name == "vc-legacy-io" || name == "vc-direct-worker";
            if engine {
                &self.on_engine
            } else {
                &self.elsewhere
            }
            .fetch_add(1, Ordering::SeqCst);
            if security::current() != Context::MountingUser {
                self.not_mounting_user.fetch_add(1, Ordering::SeqCst);
            }
            self.watched_bytes.fetch_add(len as u64, Ordering::SeqCst);
        }
        self.pass();
    }
    fn pass(&self) {
        let mut held = self.held.lock().unwrap();
        if *held {
            self.blocked.fetch_add(1, Ordering::SeqCst);
            while *held {
                held = self.released.wait(held).unwrap();
            }
            self.blocked.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl HostDevice for VerifyHost {
    type Io<'a> = ReadyIo<'a>;
    type Read<'a> = KeptRead<'a, ReadyIo<'a>>;

    fn kind(&self) -> HostKind {
        self.mem.kind()
    }
    fn size(&self) -> u64 {
        self.mem.size()
    }
    fn limits(&self) -> HostLimits {
        self.mem.limits()
    }
    fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> ReadyIo<'a> {
        self.read_starts(offset, buf.len());
        self.mem.start_read(offset, buf)
    }
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
        self.read_starts(offset, buf.len());
        self.mem.start_read_kept(offset, buf)
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> ReadyIo<'a> {
        self.pass();
        self.mem.start_write(offset, buf)
    }
    fn flush(&self) -> Result<(), Status> {
        self.pass();
        self.mem.flush()
    }
    /// While held, refused (a worker then serves the read and waits at the gate).
    fn start_read_detached(
        &self,
        offset: u64,
        buf: &mut [u8],
        origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        if *self.held.lock().unwrap() {
            return Err(Status::DeviceBusy);
        }
        self.read_starts(offset, buf.len());
        self.mem.start_read_detached(offset, buf, origin, then)
    }
}

type Plat = StdPlatform<Arc<VerifyHost>>;
type Vol = Arc<Volume<Plat>>;

fn limits() -> HostLimits {
    HostLimits {
        max_transfer: PIECE,
        ..HostLimits::unlimited()
    }
}

fn mount_on(platform: &Plat, gates: Gates) -> (Vol, Arc<VerifyHost>) {
    let mut params = mount_params(DATA_OFFSET, SIZE, gates);
    params.tunables.fragment_size = PIECE;
    params.tunables.max_work_items = 4;
    let host = Arc::new(VerifyHost::new(
        MemoryHost::new(DATA_OFFSET + SIZE + 64 * 1024).with_limits(limits()),
    ));
    let vol =
        Volume::mount(platform.clone(), Arc::clone(&host), &[7u8; 64], params).expect("mount");
    (vol, host)
}

fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < WAIT, "not reached after {WAIT:?}: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn path_name(gates: Gates) -> &'static str {
    if gates.write {
        "direct"
    } else {
        "legacy"
    }
}

/// A VERIFY's completion, recorded without allocating.
#[derive(Default)]
struct Outcome {
    done: AtomicBool,
    status: AtomicU32,
    information: AtomicUsize,
    on_system_worker: AtomicBool,
}

impl Outcome {
    fn record(&self, c: &Completion) {
        self.status.store(c.status.ntstatus(), Ordering::SeqCst);
        self.information.store(c.information, Ordering::SeqCst);
        let thread = std::thread::current();
        self.on_system_worker
            .store(thread.name() == Some("system-worker"), Ordering::SeqCst);
        self.done.store(true, Ordering::SeqCst);
    }
}

/// What one round saw.
struct Round {
    path: &'static str,
    /// (reads of the VERIFY's range on engine threads, elsewhere, not as the mounting user,
    /// bytes).
    reads: (u64, u64, u64, u64),
    /// Reads of the range started while the busy reads held the path.
    read_while_busy: u64,
    completed_while_busy: bool,
    status: Status,
    information: usize,
    on_system_worker: bool,
    allocations: usize,
    last_size: usize,
    before: CounterSnapshot,
    after: CounterSnapshot,
}

/// One round: 8 reads hold the path (each direct worker, or the legacy I/O thread and its
/// queue), then a VERIFY is sent from a thread of its own at PASSIVE_LEVEL (as the I/O manager
/// sends a device control); the host is released and everything completes. Allocations are
/// counted from the VERIFY's dispatch until the volume is idle again.
fn round(vol: &Vol, host: &VerifyHost, gates: Gates) -> Round {
    let busy_done = Arc::new(AtomicUsize::new(0));
    let reads: Vec<TestRequest> = (0..BUSY)
        .map(|i| {
            let done = Arc::clone(&busy_done);
            TestRequest::read(i as u64 * 4096, 4096, move |c| {
                assert_eq!(c.status, Status::Success);
                done.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    let outcome = Arc::new(Outcome::default());
    let recorder = Arc::clone(&outcome);
    let verify = TestRequest::verify(VERIFY_AT as i64, VERIFY_LEN, move |c| recorder.record(&c));
    // The sender: a thread of its own (with the fault switch on, it is the one that blocks
    // in the host read), started before anything is counted.
    let go = Arc::new(AtomicBool::new(false));
    let sender = {
        let (go, vol) = (Arc::clone(&go), Arc::clone(vol));
        std::thread::Builder::new()
            .name("verify-sender".into())
            .spawn(move || {
                while !go.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                dispatch_at(Irql::Passive, &vol, verify);
            })
            .expect("spawn the sender")
    };
    let watch_start = DATA_OFFSET + VERIFY_AT;
    host.watch(watch_start..watch_start + u64::from(VERIFY_LEN));
    let before = vol.counters.snapshot();
    host.hold();
    for read in reads {
        // At DISPATCH_LEVEL: never issued by this thread; a worker (or the legacy queue) takes
        // each and blocks in the host.
        dispatch_at(Irql::Dispatch, vol, read);
    }
    let holders = if gates.write { BUSY } else { 1 };
    wait_for("the busy reads hold the path", || {
        host.blocked.load(Ordering::SeqCst) >= holders
    });
    let allocations_before = ALLOCATIONS.load(Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    go.store(true, Ordering::SeqCst);
    // Its turn has not come: give it time to be (wrongly) served.
    std::thread::sleep(Duration::from_millis(100));
    let completed_while_busy = outcome.done.load(Ordering::SeqCst);
    let read_while_busy = {
        let (engine, elsewhere, _, _) = host.watched();
        engine + elsewhere
    };
    host.release();
    wait_for("the VERIFY completed", || {
        outcome.done.load(Ordering::SeqCst)
    });
    wait_for("the busy reads completed", || {
        busy_done.load(Ordering::SeqCst) == BUSY
    });
    wait_for("the volume is idle", || vol.in_flight() == 0);
    wait_for("the completion stage is idle", || vol.completions_idle());
    COUNTING.store(false, Ordering::SeqCst);
    let allocations = ALLOCATIONS.load(Ordering::SeqCst) - allocations_before;
    sender.join().expect("the sender returned");
    Round {
        path: path_name(gates),
        reads: host.watched(),
        read_while_busy,
        completed_while_busy,
        status: Status::from_ntstatus(outcome.status.load(Ordering::SeqCst)),
        information: outcome.information.load(Ordering::SeqCst),
        on_system_worker: outcome.on_system_worker.load(Ordering::SeqCst),
        allocations,
        last_size: LAST.load(Ordering::SeqCst),
        before,
        after: vol.counters.snapshot(),
    }
}

/// Mounts a volume with `gates`, runs two warm-up rounds and a measured one.
fn scenario(platform: &Plat, gates: Gates) -> Round {
    let (vol, host) = mount_on(platform, gates);
    for _ in 0..2 {
        round(&vol, &host, gates);
    }
    let r = round(&vol, &host, gates);
    vol.dismount();
    r
}

/// The checks of one round, the thread check first.
fn check(r: &Round) {
    let path = r.path;
    let (engine, elsewhere, not_user, bytes) = r.reads;
    assert!(
        elsewhere == 0 && engine > 0,
        "{path}: the VERIFY's host range was read {elsewhere} time(s) on the sender's thread \
         (not on an engine thread) and {engine} time(s) on an engine thread"
    );
    assert_eq!(
        (engine, bytes),
        (u64::from(VERIFY_LEN / PIECE), u64::from(VERIFY_LEN)),
        "{path}: the VERIFY is read whole, a piece of at most {PIECE} bytes at a time"
    );
    assert_eq!(not_user, 0, "{path}: R11: read as the mounting user");
    assert!(
        !r.completed_while_busy && r.read_while_busy == 0,
        "{path}: the VERIFY did not wait its turn (completed {}, {} reads while the path was busy)",
        r.completed_while_busy,
        r.read_while_busy
    );
    assert_eq!(
        (r.status, r.information),
        (Status::Success, 0),
        "{path}: VERIFY's reply"
    );
    assert!(
        r.on_system_worker,
        "{path}: R1: the VERIFY completed on a system worker (the completion stage)"
    );
    assert_eq!(
        r.allocations, 0,
        "{path}: serving a VERIFY allocated {} time(s) (last size {})",
        r.allocations, r.last_size
    );
    let (b, a) = (&r.before, &r.after);
    let pieces = u64::from(VERIFY_LEN / PIECE);
    let busy = BUSY as u64;
    if path == "direct" {
        // The 8 reads and the VERIFY, each one read of the path; the VERIFY moves no bytes.
        assert_eq!(a.direct_reads - b.direct_reads, busy + 1, "{path}: {a:?}");
        assert_eq!(a.direct_segments - b.direct_segments, busy + pieces);
        assert_eq!(a.direct_bytes - b.direct_bytes, busy * 4096);
        assert!(
            a.slot_waits > b.slot_waits,
            "{path}: it waited for a worker"
        );
        assert_eq!(a.legacy_reads, b.legacy_reads);
    } else {
        assert_eq!(a.legacy_reads - b.legacy_reads, busy + 1, "{path}: {a:?}");
        assert_eq!(a.legacy_fragments - b.legacy_fragments, busy + pieces);
        assert_eq!(a.legacy_bytes - b.legacy_bytes, busy * 4096);
        assert_eq!(a.direct_reads, b.direct_reads);
    }
    assert_eq!((a.rejected, a.failed), (b.rejected, b.failed));
}

fn platform() -> Plat {
    Plat::new(0).with_inline_pieces().with_eager_work_items()
}

/// One test in this binary: while a round is counted no other test's thread (nor the test
/// harness, which allocates as tests end and start) may allocate.
#[test]
fn w10_verify_waits_its_turn_on_an_engine_thread_and_allocates_nothing_on_both_paths() {
    set_faults(&[]);
    let platform = platform();
    for gates in [Gates::OFF, DIRECT] {
        let r = scenario(&platform, gates);
        eprintln!(
            "w10 verify {}: {:?} reads of its range (engine, sender, not as the user, bytes), \
             {} allocations",
            r.path, r.reads, r.allocations
        );
        check(&r);
    }
    // The check bites: with the fault switch `VerifyOnCallerThread` (the old way: a
    // synchronous read on the sender's thread) the thread check fails with its own message.
    for gates in [Gates::OFF, DIRECT] {
        set_faults(&[Fault::VerifyOnCallerThread]);
        let r = scenario(&platform, gates);
        set_faults(&[]);
        let failed = std::panic::catch_unwind(|| check(&r)).expect_err("the check fails");
        let message = failed.downcast_ref::<String>().cloned().unwrap_or_default();
        eprintln!("w10 verify, fault switch VerifyOnCallerThread: {message}");
        assert!(
            message.contains("time(s) on the sender's thread (not on an engine thread)"),
            "{}: {message}",
            r.path
        );
    }
}
