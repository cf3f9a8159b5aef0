//! W6: once a volume is mounted and warm, serving a request allocates nothing, on either path,
//! for reads, writes (disjoint and overlapping), flushes and cancels, with more requests
//! outstanding than any engine queue's initial size (the range lock's 256 entries, so the
//! arrival backlog, the path FIFOs and the completion queue all hold hundreds at once).
//!
//! A counting global allocator counts every allocation and reallocation made by any thread
//! while a round is measured. The requests (their buffers, callbacks and cancel handles) are
//! built before counting starts; the issuer's callback only bumps an atomic. Each scenario runs
//! a warm-up round of the same shape first: what is allocated once and then kept (the std
//! platform's system worker threads, the lazily allocated chunks of the memory medium) is
//! allocated there.
// A global allocator is an unsafe trait; this test binary is its only user.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use vcdirect::platform::{Detached, HostDevice, HostKind, HostLimits, KeptRead, Origin};
use vcdirect::registry::Gates;
use vcdirect::volume::Volume;
use vcdirect::Status;
use vcdirect_usermode::host::{MemoryHost, ReadyIo};
use vcdirect_usermode::mount::mount_params;
use vcdirect_usermode::request::{CancelHandle, TestRequest};
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
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
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

const LEN: u32 = 4096;
/// Requests outstanding at once: more than the range lock's 256 entries and every queue's
/// initial capacity.
const OUTSTANDING: usize = 600;
const SIZE: u64 = 4 * 1024 * 1024;
const WAIT: Duration = Duration::from_secs(60);

/// A memory medium whose operations (flushes included) block while it is held, so requests
/// pile up in the engine's queues.
struct GateHost {
    mem: MemoryHost,
    held: Mutex<bool>,
    released: Condvar,
}

impl GateHost {
    fn hold(&self) {
        *self.held.lock().unwrap() = true;
    }
    fn release(&self) {
        *self.held.lock().unwrap() = false;
        self.released.notify_all();
    }
    fn pass(&self) {
        let mut held = self.held.lock().unwrap();
        while *held {
            held = self.released.wait(held).unwrap();
        }
    }
}

impl HostDevice for GateHost {
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
        self.pass();
        self.mem.start_read(offset, buf)
    }
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
        self.pass();
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
    /// While held, refused (the workers take the write and wait at the gate); otherwise the
    /// medium writes now and reports at once.
    fn start_write_detached(
        &self,
        offset: u64,
        buf: &[u8],
        origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        if *self.held.lock().unwrap() {
            return Err(Status::DeviceBusy);
        }
        self.mem.start_write_detached(offset, buf, origin, then)
    }
    /// While held, refused (the workers take the read and wait at the gate); otherwise the
    /// medium reads now and reports at once.
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
        self.mem.start_read_detached(offset, buf, origin, then)
    }
}

type Plat = StdPlatform<Arc<GateHost>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    /// Writes that all overlap (each waits for the one before: long dependency chains).
    OverlappingWrite,
    Flush,
    /// Reads cancelled while they wait (the first ones, already at the host, complete).
    Cancel,
    /// Reads and writes the dispatching thread issues itself (the host is not held),
    /// finished where the host reports them.
    DispatchRead,
    DispatchWrite,
    /// Reads dispatched at DISPATCH_LEVEL (the host is not held): the workers issue them
    /// without waiting for them.
    WorkerDetachedRead,
}

const KINDS: [Kind; 8] = [
    Kind::Read,
    Kind::Write,
    Kind::OverlappingWrite,
    Kind::Flush,
    Kind::Cancel,
    Kind::DispatchRead,
    Kind::DispatchWrite,
    Kind::WorkerDetachedRead,
];

fn build(kind: Kind, i: usize, done: &Arc<AtomicUsize>) -> TestRequest {
    let done = Arc::clone(done);
    let callback = move |c| {
        drop(c);
        done.fetch_add(1, Ordering::SeqCst);
    };
    let offset = (i as u64 * u64::from(LEN)) % SIZE;
    match kind {
        Kind::Read | Kind::Cancel | Kind::DispatchRead | Kind::WorkerDetachedRead => {
            TestRequest::read(offset, LEN, callback)
        }
        Kind::Write | Kind::DispatchWrite => {
            TestRequest::write(offset, &[i as u8; LEN as usize], callback)
        }
        Kind::OverlappingWrite => TestRequest::write(0, &[i as u8; LEN as usize], callback),
        Kind::Flush => TestRequest::flush(callback),
    }
}

fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < WAIT, "not reached after {WAIT:?}: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// One round: `OUTSTANDING` requests of `kind` dispatched while the host is held, then
/// released; returns the allocations made from the first dispatch until the volume is idle.
fn round(vol: &Arc<Volume<Plat>>, host: &GateHost, kind: Kind) -> usize {
    let done = Arc::new(AtomicUsize::new(0));
    let requests: Vec<TestRequest> = (0..OUTSTANDING).map(|i| build(kind, i, &done)).collect();
    let cancels: Vec<CancelHandle> = requests.iter().map(|r| r.cancel_handle()).collect();
    let cancel_vol = Arc::clone(vol);
    let free_host = matches!(
        kind,
        Kind::DispatchRead | Kind::DispatchWrite | Kind::WorkerDetachedRead
    );
    if !free_host {
        host.hold();
    }
    let before_counters = vol.counters.snapshot();
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    for request in requests {
        if kind == Kind::WorkerDetachedRead {
            vcdirect_usermode::irql::dispatch(vol, request);
        } else {
            vol.dispatch(request);
        }
    }
    if kind == Kind::Cancel {
        for handle in &cancels {
            handle.cancel(|key| cancel_vol.cancel(key));
        }
    }
    host.release();
    wait_for("every request completed", || {
        done.load(Ordering::SeqCst) == OUTSTANDING
    });
    wait_for("the volume is idle", || vol.in_flight() == 0);
    COUNTING.store(false, Ordering::SeqCst);
    let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
    // Every one of them took that way (the host free; the gate on for its direction).
    let after = vol.counters.snapshot();
    let (issued, detached) = (
        after.dispatch_issued - before_counters.dispatch_issued,
        after.detached - before_counters.detached,
    );
    let n = OUTSTANDING as u64;
    match kind {
        Kind::DispatchRead if vol.effective().direct_read => assert_eq!(issued, n),
        Kind::DispatchWrite if vol.effective().direct_write => assert_eq!(issued, n),
        Kind::WorkerDetachedRead if vol.effective().direct_read => {
            assert_eq!((issued, detached), (0, n))
        }
        _ => {}
    }
    allocations
}

/// Mounts one volume with `gates` and measures every kind on it (the engine threads started
/// at mount have long been running when a round is counted); allocations per kind.
fn scenario(platform: &Plat, gates: Gates) -> Vec<(Kind, usize)> {
    let mut params = mount_params(128 * 1024, SIZE, gates);
    // Few work-item threads (all started at mount: `with_eager_work_items`).
    params.tunables.max_work_items = 4;
    let host = Arc::new(GateHost {
        mem: MemoryHost::new(128 * 1024 + SIZE),
        held: Mutex::new(false),
        released: Condvar::new(),
    });
    let vol =
        Volume::mount(platform.clone(), Arc::clone(&host), &[7u8; 64], params).expect("mount");
    let mut counts = Vec::new();
    for kind in KINDS {
        // Warm-up: the medium's chunks, the threads' own state, the longest queues.
        for _ in 0..2 {
            round(&vol, &host, kind);
        }
        counts.push((kind, round(&vol, &host, kind)));
    }
    vol.dismount();
    counts
}

/// One test (so no other test's thread allocates while a round is counted).
#[test]
fn w6_no_allocation_per_request_once_warm() {
    // A System thread (a file system's or server's worker): the dispatching thread may issue.
    vcdirect_usermode::security::set_caller(vcdirect_usermode::security::Caller::System);
    // The counter sees allocations (the check can fail).
    COUNTING.store(true, Ordering::SeqCst);
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    drop(std::hint::black_box(vec![1u8; 64]));
    let seen = ALLOCATIONS.load(Ordering::SeqCst) - before;
    COUNTING.store(false, Ordering::SeqCst);
    assert!(seen >= 1, "the counting allocator counts");

    // One platform for every scenario, so no thread of an earlier one ends (and frees or
    // allocates its thread state) while a round is counted. The engine splits legacy crypto
    // for a pool of every CPU; the pieces run on the caller (rayon's own queue blocks are not
    // the engine's allocations, see `with_inline_pieces`).
    let platform = Plat::new(0).with_inline_pieces().with_eager_work_items();
    let mut failures = Vec::new();
    for (path, gates) in [
        (
            "direct",
            Gates {
                read: true,
                write: true,
            },
        ),
        ("legacy", Gates::OFF),
    ] {
        for (kind, n) in scenario(&platform, gates) {
            eprintln!(
                "w6: {path} {kind:?}: {n} allocations for {OUTSTANDING} requests ({:.2} per request; last size {})",
                n as f64 / OUTSTANDING as f64, LAST.load(Ordering::SeqCst)
            );
            if n != 0 {
                failures.push(format!("{path} {kind:?}: {n}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "allocations while serving warm requests: {failures:?}"
    );
}
