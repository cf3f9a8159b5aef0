//! W10, R13: IOCTL_DISK_VERIFY served by the engine, on both paths (gates off: the legacy
//! queue; gates on: the direct workers): its length is capped (`disk_ioctl::VERIFY_MAX`: over
//! it, STATUS_INVALID_PARAMETER and nothing read; misaligned, past the end or negative as a
//! read), a failing host read's status is what it reports (a short read STATUS_INVALID_PARAMETER),
//! a VERIFY waiting its turn can be cancelled (nothing read), and dismount waits for a queued
//! one (R13). One VERIFY at a time per volume, the others waiting their turn in arrival order
//! (as disk.sys serializes them): a flood from any handle all succeeds, delays the owner's read
//! by one VERIFY at most, and dismount serves the one in service only (those waiting complete
//! STATUS_DEVICE_NOT_READY; the fault switch `VerifyUnlimited` makes that check fail); a VERIFY
//! waiting its turn can be cancelled (by its key, no search of the line: 2,000 cancelled newest
//! first cost one step each), and the turn never sticks. A queued VERIFY serves the range
//! it validated; it takes the direct path only with both gates and records no legacy reason
//! (R6); a long legacy request cancelled midway issues no more fragments (R2). Its turn, thread
//! and allocations: w10_verify_served_by_engine_threads.rs.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use vcdirect::disk_ioctl::VERIFY_MAX;
use vcdirect::faults::{set_faults, Fault};
use vcdirect::platform::irql::Irql;
use vcdirect::platform::{Detached, HostDevice, HostKind, HostLimits, KeptRead, Origin};
use vcdirect::registry::Gates;
use vcdirect::volume::Volume;
use vcdirect::Status;
use vcdirect_usermode::host::{MemoryHost, ReadyIo};
use vcdirect_usermode::irql::dispatch_at;
use vcdirect_usermode::mount::mount_params;
use vcdirect_usermode::request::{list_steps, Completion, TestRequest};
use vcdirect_usermode::security::{self, Context};
use vcdirect_usermode::std_platform::StdPlatform;

const DATA_OFFSET: u64 = 128 * 1024;
const SIZE: u64 = 8 << 20;
/// The host's maximum transfer, and the legacy fragment size: a 1 MiB VERIFY is 8 host reads
/// on either path (the direct worker's bounce buffer has 4 windows of 128 KiB: two rounds).
const PIECE: u32 = 128 * 1024;
const VERIFY_AT: u64 = 2 << 20;
const VERIFY_LEN: u32 = 1 << 20;
/// The reads that keep the path busy: one per direct worker.
const BUSY: usize = 8;
/// Pieces at most read of a 1 MiB VERIFY whose third piece fails: the three, and on the
/// direct path the fourth, in flight beside them (its bounce buffer's round of 4 windows).
const FAILED_AT_MOST: u64 = 4;
const WAIT: Duration = Duration::from_secs(60);
/// Held for writing while a test turns a fault switch on (the switches are global), for
/// reading by every other test of this file (each counts on one VERIFY at a time, which the
/// switches break).
static FAULTS: RwLock<()> = RwLock::new(());

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
    /// The host offset of each read in `watch`, in the order they started.
    starts: Mutex<Vec<u64>>,
    /// The owner's read: `watched_bytes` when its first host read started (u64::MAX: none).
    owner: Mutex<Range<u64>>,
    before_owner: AtomicU64,
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
            starts: Mutex::new(Vec::new()),
            owner: Mutex::new(0..0),
            before_owner: AtomicU64::new(u64::MAX),
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
        self.starts.lock().unwrap().clear();
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
            self.starts.lock().unwrap().push(offset);
        }
        let owner = self.owner.lock().unwrap().clone();
        if offset < owner.end && owner.start < offset + len as u64 {
            let seen = self.watched_bytes.load(Ordering::SeqCst);
            let _ = self.before_owner.compare_exchange(
                u64::MAX,
                seen,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
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

fn platform() -> Plat {
    Plat::new(0).with_inline_pieces().with_eager_work_items()
}

/// A VERIFY sent now (at DISPATCH_LEVEL: its dispatch only queues it); its completion.
fn verify(vol: &Vol, offset: i64, length: u32) -> Completion {
    let (tx, rx) = std::sync::mpsc::channel();
    dispatch_at(
        Irql::Dispatch,
        vol,
        TestRequest::verify(offset, length, move |c| {
            let _ = tx.send(c);
        }),
    );
    rx.recv_timeout(WAIT).expect("the VERIFY completed")
}

#[test]
fn w10_verify_over_its_cap_is_refused_and_reads_nothing() {
    let _no_faults = FAULTS.read().unwrap_or_else(|e| e.into_inner());
    let platform = platform();
    for gates in [Gates::OFF, DIRECT] {
        let (vol, host) = mount_on(&platform, gates);
        let path = path_name(gates);
        host.watch(0..u64::MAX);
        // The cap itself is served: 4 MiB, read whole (it counts as one read of the path that
        // served it).
        let before = vol.counters.snapshot();
        let c = verify(&vol, 0, VERIFY_MAX);
        assert_eq!((c.status, c.information), (Status::Success, 0), "{path}");
        assert_eq!(host.watched().3, u64::from(VERIFY_MAX), "{path}");
        let after = vol.counters.snapshot();
        assert_eq!(
            (
                after.direct_reads - before.direct_reads,
                after.legacy_reads - before.legacy_reads
            ),
            // Longer than the direct path takes (1 MiB, `MAX_DIRECT_REQUEST`): the legacy
            // queue serves it on both volumes.
            (0, 1),
            "{path}: (direct, legacy) reads for the VERIFY at the cap"
        );
        let before = vol.counters.snapshot();
        host.watch(0..u64::MAX);
        for (offset, length) in [
            (0, VERIFY_MAX + 512),
            (0, u32::MAX - 511),
            // Misaligned, past the end, negative: refused as a read is.
            (100, 512),
            (0, 100),
            (SIZE as i64 - 512, 1024),
            (-512, 512),
            (i64::MAX - 511, 512),
        ] {
            let c = verify(&vol, offset, length);
            assert_eq!(
                (c.status, c.information),
                (Status::InvalidParameter, 0),
                "{path}: {offset}+{length}"
            );
        }
        assert_eq!(
            host.watched(),
            (0, 0, 0, 0),
            "{path}: a refused VERIFY read"
        );
        let after = vol.counters.snapshot();
        assert_eq!(after.rejected - before.rejected, 7, "{path}");
        assert_eq!(
            after.direct_reads + after.legacy_reads,
            before.direct_reads + before.legacy_reads
        );
        // Zero bytes: success, nothing read.
        let c = verify(&vol, 4096, 0);
        assert_eq!(c.status, Status::Success, "{path}");
        assert_eq!(host.watched(), (0, 0, 0, 0), "{path}");
        vol.dismount();
    }
}

#[test]
fn w10_verify_reports_the_failing_host_reads_status() {
    let _no_faults = FAULTS.read().unwrap_or_else(|e| e.into_inner());
    let platform = platform();
    let data_error = Status::Host(0xC000_009C); // STATUS_DEVICE_DATA_ERROR
    for gates in [Gates::OFF, DIRECT] {
        let (vol, host) = mount_on(&platform, gates);
        let path = path_name(gates);
        // The third piece fails: the status is the host's, and nothing is issued after it
        // (pieces already in flight with it finish: the direct path reads a round of 4).
        let bad = DATA_OFFSET + VERIFY_AT + 2 * u64::from(PIECE);
        host.mem.fail_range(bad..bad + 512, data_error);
        let before = vol.counters.snapshot();
        host.watch(DATA_OFFSET + VERIFY_AT..DATA_OFFSET + VERIFY_AT + u64::from(VERIFY_LEN));
        let c = verify(&vol, VERIFY_AT as i64, VERIFY_LEN);
        assert_eq!((c.status, c.information), (data_error, 0), "{path}");
        let (reads, _, _, bytes) = host.watched();
        eprintln!("w10 verify {path}: failing third piece, {reads} pieces read ({bytes} bytes)");
        assert!(
            bytes <= FAILED_AT_MOST * u64::from(PIECE),
            "{path}: {bytes} bytes read for a VERIFY whose third piece failed"
        );
        assert_eq!(vol.counters.snapshot().failed - before.failed, 1, "{path}");
        host.mem.clear_faults();
        // A short read is VeraCrypt's STATUS_INVALID_PARAMETER.
        host.mem.short_range(bad..bad + 512);
        let c = verify(&vol, VERIFY_AT as i64, VERIFY_LEN);
        assert_eq!(c.status, Status::InvalidParameter, "{path}");
        host.mem.clear_faults();
        let c = verify(&vol, VERIFY_AT as i64, VERIFY_LEN);
        assert_eq!(c.status, Status::Success, "{path}");
        vol.dismount();
    }
}

/// Holds the path with 8 reads; returns their completion count.
fn hold_the_path(vol: &Vol, host: &VerifyHost, gates: Gates) -> Arc<AtomicUsize> {
    let done = Arc::new(AtomicUsize::new(0));
    host.hold();
    for i in 0..BUSY {
        let done = Arc::clone(&done);
        dispatch_at(
            Irql::Dispatch,
            vol,
            TestRequest::read(i as u64 * 4096, 4096, move |_| {
                done.fetch_add(1, Ordering::SeqCst);
            }),
        );
    }
    let holders = if gates.write { BUSY } else { 1 };
    wait_for("the busy reads hold the path", || {
        host.blocked.load(Ordering::SeqCst) >= holders
    });
    done
}

/// A VERIFY sent now; its completion arrives on the returned channel, and its cancel handle.
fn verify_later(
    vol: &Vol,
) -> (
    std::sync::mpsc::Receiver<Completion>,
    vcdirect_usermode::request::CancelHandle,
) {
    let (tx, rx) = std::sync::mpsc::channel();
    let request = TestRequest::verify(VERIFY_AT as i64, VERIFY_LEN, move |c| {
        let _ = tx.send(c);
    });
    let handle = request.cancel_handle();
    dispatch_at(Irql::Dispatch, vol, request);
    (rx, handle)
}

/// Cancels the request behind `handle` through the volume's cancel routine.
fn cancel(vol: &Vol, handle: &vcdirect_usermode::request::CancelHandle) -> bool {
    let vol = Arc::clone(vol);
    handle.cancel(|key| vol.cancel(key))
}

/// W10: with the path held, a VERIFY in service and two waiting their turn; the first waiting
/// one is cancelled: it completes STATUS_CANCELLED at once and reads nothing, and the next one
/// is then served.
#[test]
fn w10_a_verify_waiting_its_turn_is_cancelled_and_reads_nothing() {
    let _no_faults = FAULTS.read().unwrap_or_else(|e| e.into_inner());
    let platform = platform();
    for gates in [Gates::OFF, DIRECT] {
        let (vol, host) = mount_on(&platform, gates);
        let path = path_name(gates);
        let busy = hold_the_path(&vol, &host, gates);
        host.watch(DATA_OFFSET + VERIFY_AT..DATA_OFFSET + VERIFY_AT + u64::from(VERIFY_LEN));
        let (first, _) = verify_later(&vol);
        let (waiting, handle) = verify_later(&vol);
        let (next, _) = verify_later(&vol);
        assert!(
            cancel(&vol, &handle),
            "{path}: the waiting VERIFY's cancel routine ran"
        );
        let c = waiting
            .recv_timeout(WAIT)
            .expect("the cancelled VERIFY completed");
        assert_eq!((c.status, c.information), (Status::Cancelled, 0), "{path}");
        assert_eq!(
            host.watched().3,
            0,
            "{path}: a VERIFY read while the path was held"
        );
        host.release();
        for (name, rx) in [("in service", first), ("next", next)] {
            let c = rx.recv_timeout(WAIT).expect("the VERIFY completed");
            assert_eq!(c.status, Status::Success, "{path}: the VERIFY {name}");
        }
        wait_for("the busy reads completed", || {
            busy.load(Ordering::SeqCst) == BUSY
        });
        let bytes = host.watched().3;
        eprintln!("w10 verify {path}: one of three cancelled while waiting, {bytes} bytes read");
        assert_eq!(
            bytes,
            2 * u64::from(VERIFY_LEN),
            "{path}: the cancelled VERIFY read"
        );
        vol.dismount();
        assert_eq!(vol.open_cancel_handshakes(), 0, "{path}");
    }
}

/// VERIFYs parked behind the one in service and cancelled by
/// `w10_two_thousand_waiting_verifies_are_cancelled_without_a_search_of_the_line`.
const PARKED: usize = 2_000;

/// The (status, information) of each completion of one request.
type Completions = Mutex<Vec<(Status, usize)>>;

/// The order the 2,000 waiting VERIFYs are cancelled in: the oldest still waiting, the newest,
/// then the middle one, in turn, so the line is unlinked at its head, its tail and inside it.
fn mixed_order(n: usize) -> Vec<usize> {
    let mut waiting: std::collections::VecDeque<usize> = (0..n).collect();
    let mut order = Vec::with_capacity(n);
    for turn in 0.. {
        let next = match turn % 3 {
            0 => waiting.pop_front(),
            1 => waiting.pop_back(),
            _ => waiting.remove(waiting.len() / 2),
        };
        match next {
            Some(i) => order.push(i),
            None => break,
        }
    }
    order
}

/// W10: 2,000 VERIFYs wait behind one in service (the path held), and all are cancelled in a
/// mixed order (the oldest, the newest, the middle one, in turn: the unlink by key at the
/// line's head, tail and inside, through the engine's list code the kernel runs, with its
/// neighbour check): each completes exactly once with
/// STATUS_CANCELLED and information 0, none reads a byte, the line is empty after, and only the
/// one in service is read once released. The cancels never search the line: each asks it once
/// by key (`RequestList::remove_key`), and the requests looked at by searches (`remove_first`'s
/// picks, the paths' FIFOs: the busy reads and the VERIFY in service) stay within `BUSY + 2` per
/// cancel, where a search of the line looks at every VERIFY before the one it cancels (about
/// a million in all in this order). After each cancel the line is one shorter. No clock is
/// asserted: the steps are counted.
#[test]
fn w10_two_thousand_waiting_verifies_are_cancelled_without_a_search_of_the_line() {
    let _no_faults = FAULTS.read().unwrap_or_else(|e| e.into_inner());
    let platform = platform();
    for gates in [Gates::OFF, DIRECT] {
        let (vol, host) = mount_on(&platform, gates);
        let path = path_name(gates);
        let busy = hold_the_path(&vol, &host, gates);
        host.watch(DATA_OFFSET + VERIFY_AT..DATA_OFFSET + VERIFY_AT + u64::from(VERIFY_LEN));
        let (first, _) = verify_later(&vol);
        let completions: Arc<Vec<Completions>> =
            Arc::new((0..PARKED).map(|_| Mutex::new(Vec::new())).collect());
        let completed = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..PARKED)
            .map(|i| {
                let completions = Arc::clone(&completions);
                let completed = Arc::clone(&completed);
                let request = TestRequest::verify(VERIFY_AT as i64, VERIFY_LEN, move |c| {
                    completions[i]
                        .lock()
                        .unwrap()
                        .push((c.status, c.information));
                    completed.fetch_add(1, Ordering::SeqCst);
                });
                let handle = request.cancel_handle();
                dispatch_at(Irql::Dispatch, &vol, request);
                handle
            })
            .collect();
        assert_eq!(
            vol.verifies_waiting(),
            PARKED,
            "{path}: VERIFYs waiting behind the one in service"
        );
        let (picks_before, keyed_before) = list_steps();
        for (done, i) in mixed_order(PARKED).into_iter().enumerate() {
            assert!(
                cancel(&vol, &handles[i]),
                "{path}: the cancel routine of waiting VERIFY {i} ran"
            );
            assert_eq!(
                vol.verifies_waiting(),
                PARKED - done - 1,
                "{path}: the line after the cancel of waiting VERIFY {i}"
            );
        }
        let (picks_after, keyed_after) = list_steps();
        let (picks, keyed) = (picks_after - picks_before, keyed_after - keyed_before);
        wait_for("the cancelled VERIFYs completed", || {
            completed.load(Ordering::SeqCst) >= PARKED
        });
        for (i, c) in completions.iter().enumerate() {
            let c = c.lock().unwrap();
            assert_eq!(
                c[..],
                [(Status::Cancelled, 0)],
                "{path}: waiting VERIFY {i} completed {c:?}, not once cancelled"
            );
        }
        assert_eq!(
            vol.verifies_waiting(),
            0,
            "{path}: VERIFYs left in the line"
        );
        assert_eq!(
            host.watched().3,
            0,
            "{path}: a cancelled VERIFY read while the path was held"
        );
        eprintln!(
            "w10 verify {path}: {PARKED} waiting VERIFYs cancelled head, tail and middle in turn: \
             {keyed} asked by key, {picks} requests looked at by searches ({:.1} per cancel)",
            picks as f64 / PARKED as f64
        );
        assert!(
            picks <= (PARKED * (BUSY + 2)) as u64,
            "{path}: the cancels looked at {picks} requests in searches for {PARKED} waiting \
             VERIFYs (more than {} per cancel: the line was searched)",
            BUSY + 2
        );
        assert_eq!(
            keyed, PARKED as u64,
            "{path}: each cancel asks the line once by key"
        );
        host.release();
        let c = first
            .recv_timeout(WAIT)
            .expect("the VERIFY in service completed");
        assert_eq!(c.status, Status::Success, "{path}: the VERIFY in service");
        wait_for("the busy reads completed", || {
            busy.load(Ordering::SeqCst) == BUSY
        });
        vol.dismount();
        assert_eq!(
            host.watched().3,
            u64::from(VERIFY_LEN),
            "{path}: bytes read (the one in service only)"
        );
        assert_eq!(vol.open_cancel_handshakes(), 0, "{path}");
        assert_eq!(vol.in_flight(), 0, "{path}");
    }
}

/// W10: the VERIFY turn never sticks: after a VERIFY cancelled while waiting, one cancelled in
/// service, a failing host read, and erase_keys, a later VERIFY is still served (it succeeds;
/// after erase_keys, two in a row get the read's status).
#[test]
fn w10_the_verify_turn_never_sticks() {
    let _no_faults = FAULTS.read().unwrap_or_else(|e| e.into_inner());
    let platform = platform();
    for gates in [Gates::OFF, DIRECT] {
        let (vol, host) = mount_on(&platform, gates);
        let path = path_name(gates);
        let later = |what: &str| {
            let (rx, _) = verify_later(&vol);
            let c = rx.recv_timeout(WAIT).unwrap_or_else(|_| {
                panic!("{path}: a VERIFY after {what} never completed (the turn stuck)")
            });
            assert_eq!(c.status, Status::Success, "{path}: a VERIFY after {what}");
        };
        // Cancelled while waiting.
        let busy = hold_the_path(&vol, &host, gates);
        let (first, _) = verify_later(&vol);
        let (waiting, handle) = verify_later(&vol);
        assert!(cancel(&vol, &handle), "{path}");
        let c = waiting
            .recv_timeout(WAIT)
            .expect("the waiting VERIFY completed");
        assert_eq!(c.status, Status::Cancelled, "{path}");
        host.release();
        let c = first.recv_timeout(WAIT).expect("the VERIFY completed");
        assert_eq!(c.status, Status::Success, "{path}");
        wait_for("the busy reads completed", || {
            busy.load(Ordering::SeqCst) == BUSY
        });
        later("one cancelled while waiting");
        // Cancelled in service: held in its host read, cancelled, then released.
        host.hold();
        let (in_service, handle) = verify_later(&vol);
        wait_for("the VERIFY reached the host", || {
            host.blocked.load(Ordering::SeqCst) >= 1
        });
        cancel(&vol, &handle);
        host.release();
        let c = in_service.recv_timeout(WAIT).expect("the VERIFY completed");
        assert!(
            matches!(c.status, Status::Cancelled | Status::Success),
            "{path}: a VERIFY cancelled in service: {:?}",
            c.status
        );
        later("one cancelled in service");
        // A failing host read.
        let bad = DATA_OFFSET + VERIFY_AT;
        host.mem
            .fail_range(bad..bad + 512, Status::Host(0xC000_009C));
        let c = verify(&vol, VERIFY_AT as i64, VERIFY_LEN);
        assert!(!c.status.is_success(), "{path}: a failing VERIFY");
        host.mem.clear_faults();
        later("a failing host read");
        // erase_keys: each VERIFY gets the read's status, and the next is still served.
        vol.erase_keys();
        for _ in 0..2 {
            let c = verify(&vol, VERIFY_AT as i64, VERIFY_LEN);
            assert!(!c.status.is_success(), "{path}: a VERIFY after erase_keys");
            assert_ne!(c.status, Status::Cancelled, "{path}");
        }
        eprintln!("w10 verify {path}: the turn was free after each of cancel waiting, cancel in service, host failure, erase_keys");
        vol.dismount();
        assert_eq!(vol.open_cancel_handshakes(), 0, "{path}");
    }
}

#[test]
fn r13_dismount_waits_for_a_queued_verify() {
    let _no_faults = FAULTS.read().unwrap_or_else(|e| e.into_inner());
    let platform = platform();
    for gates in [Gates::OFF, DIRECT] {
        let (vol, host) = mount_on(&platform, gates);
        let path = path_name(gates);
        let busy = hold_the_path(&vol, &host, gates);
        let (tx, rx) = std::sync::mpsc::channel();
        dispatch_at(
            Irql::Dispatch,
            &vol,
            TestRequest::verify(VERIFY_AT as i64, VERIFY_LEN, move |c| {
                let _ = tx.send(c);
            }),
        );
        let dismounted = Arc::new(AtomicBool::new(false));
        let dismount = {
            let (vol, dismounted) = (Arc::clone(&vol), Arc::clone(&dismounted));
            std::thread::spawn(move || {
                vol.dismount();
                dismounted.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !dismounted.load(Ordering::SeqCst),
            "{path}: dismount returned with the VERIFY queued"
        );
        host.release();
        dismount.join().expect("dismount returned");
        let c = rx
            .try_recv()
            .expect("the VERIFY completed before dismount returned");
        assert_eq!(c.status, Status::Success, "{path}");
        assert_eq!(busy.load(Ordering::SeqCst), BUSY);
    }
}

/// VERIFYs sent at once by any handle (the IOCTL is FILE_ANY_ACCESS).
const FLOOD: usize = 200;
/// The owner's read, away from the VERIFYs' range.
const OWNER_AT: u64 = 6 << 20;

/// What a flood of VERIFYs did to the owner's read and to dismount, on one path.
struct Flood {
    path: &'static str,
    /// Bytes of the VERIFYs' range read from the host before the owner's read started.
    before_owner: u64,
    owner: Status,
    /// The flood's completions: (success, STATUS_DEVICE_NOT_READY, other), while the volume
    /// ran.
    flood: (usize, usize, usize),
    /// Runs of host reads (in the order they started, each run one range: the flood cycles
    /// through three) that are not exactly one VERIFY's pieces, and those whose range is not
    /// the one the next VERIFY in arrival order has: (0, 0) when they are served one at a
    /// time, in order.
    interleaved: usize,
    out_of_order: usize,
    /// Bytes of the VERIFYs' range dismount read after a second flood, and how long it took.
    at_dismount: u64,
    dismount_took: Duration,
    /// The second flood's completions (as `flood`).
    dismount_flood: (usize, usize, usize),
}

/// The flood's completions.
type FloodDone = std::sync::mpsc::Receiver<Completion>;

/// The ranges the flood's VERIFYs cycle through, from `VERIFY_AT`.
const RANGES: usize = 3;

/// The flood's VERIFYs cycle through [`RANGES`] ranges, `VERIFY_AT` and the ones after it.
fn send_flood(vol: &Vol) -> FloodDone {
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..FLOOD {
        let tx = tx.clone();
        let at = VERIFY_AT + (i % RANGES) as u64 * u64::from(VERIFY_LEN);
        dispatch_at(
            Irql::Dispatch,
            vol,
            TestRequest::verify(at as i64, VERIFY_LEN, move |c| {
                let _ = tx.send(c);
            }),
        );
    }
    rx
}

/// (success, STATUS_DEVICE_NOT_READY, other).
fn tally(rx: &FloodDone) -> (usize, usize, usize) {
    let mut counts = (0, 0, 0);
    for _ in 0..FLOOD {
        let c = rx
            .recv_timeout(WAIT)
            .expect("every VERIFY of the flood completed");
        match c.status {
            Status::Success => counts.0 += 1,
            Status::DeviceNotReady => counts.1 += 1,
            _ => counts.2 += 1,
        }
    }
    counts
}

/// The host reads of the flood, in the order they started, cut into runs of one range: the
/// runs that are not exactly one VERIFY's pieces, and those whose range is not the one of the
/// next VERIFY in arrival order ((0, 0): served one at a time, in order).
fn runs(host: &VerifyHost) -> (usize, usize) {
    let pieces = (VERIFY_LEN / PIECE) as usize;
    let first = DATA_OFFSET + VERIFY_AT;
    let starts = host.starts.lock().unwrap();
    let mut ranges = Vec::new();
    for &offset in starts.iter() {
        let range = ((offset - first) / u64::from(VERIFY_LEN)) as usize;
        match ranges.last_mut() {
            Some((last, n)) if *last == range => *n += 1,
            _ => ranges.push((range, 1usize)),
        }
    }
    let interleaved = ranges.iter().filter(|(_, n)| *n != pieces).count();
    let out_of_order = ranges
        .iter()
        .enumerate()
        .filter(|(i, (range, _))| *range != i % RANGES)
        .count();
    (interleaved, out_of_order)
}

fn flood(platform: &Plat, gates: Gates) -> Flood {
    let (vol, host) = mount_on(platform, gates);
    let path = path_name(gates);
    let busy = hold_the_path(&vol, &host, gates);
    let end = DATA_OFFSET + VERIFY_AT + RANGES as u64 * u64::from(VERIFY_LEN);
    host.watch(DATA_OFFSET + VERIFY_AT..end);
    *host.owner.lock().unwrap() = DATA_OFFSET + OWNER_AT..DATA_OFFSET + OWNER_AT + 4096;
    let verifies = send_flood(&vol);
    let (tx, rx) = std::sync::mpsc::channel();
    dispatch_at(
        Irql::Dispatch,
        &vol,
        TestRequest::read(OWNER_AT, 4096, move |c| {
            let _ = tx.send(c);
        }),
    );
    host.release();
    let owner = rx
        .recv_timeout(WAIT)
        .expect("the owner's read completed")
        .status;
    let flood = tally(&verifies);
    wait_for("the busy reads completed", || {
        busy.load(Ordering::SeqCst) == BUSY
    });
    let (interleaved, out_of_order) = runs(&host);
    let before_owner = host.before_owner.load(Ordering::SeqCst);
    // A second flood, the first VERIFY held in its host read, then dismount.
    host.hold();
    let verifies = send_flood(&vol);
    wait_for("a VERIFY reached the host", || {
        host.blocked.load(Ordering::SeqCst) >= 1
    });
    let start = Instant::now();
    let dismount = {
        let vol = Arc::clone(&vol);
        std::thread::spawn(move || vol.dismount())
    };
    std::thread::sleep(Duration::from_millis(20));
    host.release();
    dismount.join().expect("dismount returned");
    let dismount_took = start.elapsed();
    let at_dismount = host.watched().3 - flood.0 as u64 * u64::from(VERIFY_LEN);
    let dismount_flood = tally(&verifies);
    Flood {
        path,
        before_owner,
        owner,
        flood,
        interleaved,
        out_of_order,
        at_dismount,
        dismount_took,
        dismount_flood,
    }
}

fn check_flood(f: &Flood) {
    let path = f.path;
    assert_eq!(f.owner, Status::Success, "{path}: the owner's read");
    assert!(
        f.before_owner <= u64::from(VERIFY_LEN),
        "{path}: {} bytes of VERIFYs were read before the owner's read (more than one VERIFY)",
        f.before_owner
    );
    // One VERIFY at a time, the others waiting their turn: every one succeeds, in order.
    assert_eq!(f.flood, (FLOOD, 0, 0), "{path}: the flood's completions");
    assert_eq!(
        f.interleaved, 0,
        "{path}: runs of VERIFY reads that are not one VERIFY (served at once)"
    );
    assert_eq!(
        f.out_of_order, 0,
        "{path}: VERIFYs served out of arrival order"
    );
    assert!(
        f.at_dismount <= u64::from(VERIFY_LEN),
        "{path}: dismount read {} bytes of VERIFYs (more than one VERIFY)",
        f.at_dismount
    );
    // The one in service completes; those waiting are refused (R13).
    assert_eq!(
        f.dismount_flood,
        (1, FLOOD - 1, 0),
        "{path}: the second flood's completions (success, not ready, other)"
    );
    assert!(
        f.dismount_took < Duration::from_secs(10),
        "{path}: dismount took {:?}",
        f.dismount_took
    );
}

/// W10, R13: a flood of VERIFYs from any handle all succeeds, served one at a time in order;
/// it delays the owner's read by one VERIFY at most
/// and dismount serves one at most, on both paths; the fault switch `VerifyUnlimited`
/// (every VERIFY admitted) makes the check fail with its own message, and so does
/// `VerifyRefusedWhenBusy` (the others refused with STATUS_DEVICE_BUSY, the old way).
#[test]
fn w10_a_verify_flood_delays_the_owner_by_one_verify_and_dismount_serves_one() {
    let platform = platform();
    for gates in [Gates::OFF, DIRECT] {
        let f = flood(&platform, gates);
        eprintln!(
            "w10 verify flood {}: {} VERIFY bytes before the owner's read, completions {:?} \
             ({} runs of reads not one VERIFY, {} out of order); dismount read {} VERIFY bytes \
             in {:?}, completions {:?}",
            f.path,
            f.before_owner,
            f.flood,
            f.interleaved,
            f.out_of_order,
            f.at_dismount,
            f.dismount_took,
            f.dismount_flood
        );
        check_flood(&f);
    }
    // The switches are global: no test that counts on one VERIFY at a time runs meanwhile.
    let _faults = FAULTS.write().unwrap_or_else(|e| e.into_inner());
    for gates in [Gates::OFF, DIRECT] {
        set_faults(&[Fault::VerifyUnlimited]);
        let f = flood(&platform, gates);
        set_faults(&[]);
        let failed = std::panic::catch_unwind(|| check_flood(&f)).expect_err("the check fails");
        let message = failed.downcast_ref::<String>().cloned().unwrap_or_default();
        eprintln!("w10 verify flood, fault switch VerifyUnlimited: {message}");
        assert!(
            message.contains("were read before the owner's read (more than one VERIFY)"),
            "{}: {message}",
            f.path
        );
    }
    for gates in [Gates::OFF, DIRECT] {
        set_faults(&[Fault::VerifyRefusedWhenBusy]);
        let f = flood(&platform, gates);
        set_faults(&[]);
        let failed = std::panic::catch_unwind(|| check_flood(&f)).expect_err("the check fails");
        let message = failed.downcast_ref::<String>().cloned().unwrap_or_default();
        eprintln!("w10 verify flood, fault switch VerifyRefusedWhenBusy: {message}");
        assert!(
            message.contains(": the flood's completions"),
            "{}: {message}",
            f.path
        );
    }
}

/// W10, R6, R10: a VERIFY reads the host, so it takes the direct path only where both gates
/// are effective (the read gate off means no direct host reads); it is counted as a read of
/// the path that served it, and never as a legacy routing reason (those count the volume's
/// reads and writes).
#[test]
fn r6_verify_is_direct_only_with_both_gates_and_records_no_legacy_reason() {
    let _no_faults = FAULTS.read().unwrap_or_else(|e| e.into_inner());
    let platform = platform();
    for (gates, direct) in [
        (Gates::OFF, false),
        (
            Gates {
                read: true,
                write: false,
            },
            false,
        ),
        (
            Gates {
                read: false,
                write: true,
            },
            false,
        ),
        (DIRECT, true),
    ] {
        let (vol, host) = mount_on(&platform, gates);
        host.watch(DATA_OFFSET + VERIFY_AT..DATA_OFFSET + VERIFY_AT + u64::from(VERIFY_LEN));
        let before = vol.counters.snapshot();
        let c = verify(&vol, VERIFY_AT as i64, VERIFY_LEN);
        assert_eq!(c.status, Status::Success, "{gates:?}");
        let after = vol.counters.snapshot();
        assert_eq!(
            (
                after.direct_reads - before.direct_reads,
                after.legacy_reads - before.legacy_reads
            ),
            if direct { (1, 0) } else { (0, 1) },
            "{gates:?}: (direct, legacy) reads for one VERIFY"
        );
        assert_eq!(
            after.legacy_by_reason, before.legacy_by_reason,
            "{gates:?}: a VERIFY recorded a legacy routing reason"
        );
        assert_eq!(host.watched().3, u64::from(VERIFY_LEN), "{gates:?}");
        vol.dismount();
    }
}

/// W10, R14: a queued VERIFY is served over the range dispatch validated, carried with it
/// while it waits; its request is never asked for the range again (a system buffer rewritten
/// after dispatch changes nothing), on both paths.
#[test]
fn w10_a_queued_verify_serves_the_range_it_validated() {
    let _no_faults = FAULTS.read().unwrap_or_else(|e| e.into_inner());
    let platform = platform();
    for gates in [Gates::OFF, DIRECT] {
        let (vol, host) = mount_on(&platform, gates);
        let path = path_name(gates);
        let busy = hold_the_path(&vol, &host, gates);
        host.watch(DATA_OFFSET + VERIFY_AT..DATA_OFFSET + VERIFY_AT + u64::from(VERIFY_LEN));
        *host.owner.lock().unwrap() = DATA_OFFSET + OWNER_AT..DATA_OFFSET + OWNER_AT + 4096;
        let (tx, rx) = std::sync::mpsc::channel();
        dispatch_at(
            Irql::Dispatch,
            &vol,
            TestRequest::verify(VERIFY_AT as i64, VERIFY_LEN, move |c| {
                let _ = tx.send(c);
            })
            .with_range_moved_after_dispatch(OWNER_AT as i64, 4096),
        );
        host.release();
        let c = rx.recv_timeout(WAIT).expect("the VERIFY completed");
        assert_eq!(c.status, Status::Success, "{path}");
        wait_for("the busy reads completed", || {
            busy.load(Ordering::SeqCst) == BUSY
        });
        assert_eq!(
            host.watched().3,
            u64::from(VERIFY_LEN),
            "{path}: bytes of the validated range read"
        );
        assert_eq!(
            host.before_owner.load(Ordering::SeqCst),
            u64::MAX,
            "{path}: the range asked again after dispatch was read"
        );
        vol.dismount();
    }
}

/// R2: the legacy queue checks cancellation before every fragment (beside the key block): a
/// long legacy read, or VERIFY, cancelled while its first fragment is at the host issues no
/// more of its fragments and completes with STATUS_CANCELLED.
#[test]
fn r2_a_long_legacy_request_cancelled_midway_issues_no_more_fragments() {
    let _no_faults = FAULTS.read().unwrap_or_else(|e| e.into_inner());
    let platform = platform();
    let total = (4u64 << 20) / u64::from(PIECE);
    for verify_it in [false, true] {
        let what = if verify_it { "VERIFY" } else { "read" };
        let (vol, host) = mount_on(&platform, Gates::OFF);
        host.watch(DATA_OFFSET..DATA_OFFSET + (4 << 20));
        host.hold();
        let (tx, rx) = std::sync::mpsc::channel();
        let done = move |c| {
            let _ = tx.send(c);
        };
        let request = if verify_it {
            TestRequest::verify(0, 4 << 20, done)
        } else {
            TestRequest::read(0, 4 << 20, done)
        };
        let handle = request.cancel_handle();
        dispatch_at(Irql::Dispatch, &vol, request);
        wait_for("the first fragment reached the host", || {
            host.blocked.load(Ordering::SeqCst) >= 1
        });
        let cancel_vol = Arc::clone(&vol);
        handle.cancel(|key| cancel_vol.cancel(key));
        host.release();
        let c = rx
            .recv_timeout(WAIT)
            .expect("the cancelled request completed");
        let reads = host.watched().0;
        eprintln!("r2 legacy {what} cancelled midway: {reads} of {total} fragments read");
        assert!(
            reads <= 2,
            "{what}: {reads} of {total} fragments read after the cancel (the fragment at the host, \
             and its read-ahead, at most)"
        );
        assert_eq!((c.status, c.information), (Status::Cancelled, 0), "{what}");
        vol.dismount();
    }
}

/// A request sent now; its completion arrives on the returned channel.
fn send(
    vol: &Vol,
    request: impl FnOnce(std::sync::mpsc::Sender<Completion>) -> TestRequest,
) -> std::sync::mpsc::Receiver<Completion> {
    let (tx, rx) = std::sync::mpsc::channel();
    dispatch_at(Irql::Dispatch, vol, request(tx));
    rx
}

fn done(tx: std::sync::mpsc::Sender<Completion>) -> impl FnOnce(Completion) + Send + 'static {
    move |c| {
        let _ = tx.send(c);
    }
}

/// R12: a VERIFY is ordered as a read: it waits for an earlier overlapping write, a later
/// overlapping write waits for it, and requests disjoint from it wait for nothing (the range
/// ordering's waits, counted), on both paths.
#[test]
fn r12_a_verify_is_ordered_against_overlapping_writes_only() {
    let _no_faults = FAULTS.read().unwrap_or_else(|e| e.into_inner());
    let platform = platform();
    let data = vec![0x5Au8; 4096];
    for gates in [Gates::OFF, DIRECT] {
        let (vol, host) = mount_on(&platform, gates);
        let path = path_name(gates);
        let waits = || vol.counters.snapshot().range_waits;
        host.hold();
        let w1 = send(&vol, |tx| TestRequest::write(VERIFY_AT, &data, done(tx)));
        let base = waits();
        assert_eq!(base, 0, "{path}: the first write waited");
        let v = send(&vol, |tx| {
            TestRequest::verify(VERIFY_AT as i64, VERIFY_LEN, done(tx))
        });
        assert_eq!(
            waits(),
            1,
            "{path}: the VERIFY did not wait for the earlier overlapping write"
        );
        let w2 = send(&vol, |tx| {
            TestRequest::write(VERIFY_AT + 64 * 1024, &data, done(tx))
        });
        assert_eq!(
            waits(),
            2,
            "{path}: a later overlapping write did not wait for the VERIFY"
        );
        let w3 = send(&vol, |tx| TestRequest::write(OWNER_AT, &data, done(tx)));
        assert_eq!(waits(), 2, "{path}: a disjoint write waited");
        host.release();
        for (what, rx) in [("w1", w1), ("verify", v), ("w2", w2), ("w3", w3)] {
            let c = rx.recv_timeout(WAIT).expect("completed");
            assert_eq!(c.status, Status::Success, "{path}: {what}");
        }
        // A VERIFY disjoint from a write in flight waits for nothing.
        host.hold();
        let w4 = send(&vol, |tx| TestRequest::write(OWNER_AT, &data, done(tx)));
        let v = send(&vol, |tx| {
            TestRequest::verify(VERIFY_AT as i64, VERIFY_LEN, done(tx))
        });
        assert_eq!(waits(), 2, "{path}: a disjoint VERIFY waited");
        host.release();
        for (what, rx) in [("w4", w4), ("verify", v)] {
            let c = rx.recv_timeout(WAIT).expect("completed");
            assert_eq!(c.status, Status::Success, "{path}: {what}");
        }
        vol.dismount();
    }
}

/// R2: after erase_keys a VERIFY gets the status a read gets and reads nothing, on both paths.
#[test]
fn r2_after_erase_keys_a_verify_gets_the_reads_status_and_reads_nothing() {
    let _no_faults = FAULTS.read().unwrap_or_else(|e| e.into_inner());
    let platform = platform();
    for gates in [Gates::OFF, DIRECT] {
        let (vol, host) = mount_on(&platform, gates);
        let path = path_name(gates);
        vol.erase_keys();
        host.watch(0..u64::MAX);
        let read = send(&vol, |tx| TestRequest::read(VERIFY_AT, 4096, done(tx)))
            .recv_timeout(WAIT)
            .expect("the read completed");
        let verify = verify(&vol, VERIFY_AT as i64, VERIFY_LEN);
        assert!(!read.status.is_success(), "{path}: a read after erase_keys");
        assert_eq!(
            (verify.status, verify.information),
            (read.status, 0),
            "{path}: the VERIFY's status after erase_keys"
        );
        assert_eq!(
            host.watched(),
            (0, 0, 0, 0),
            "{path}: read after erase_keys"
        );
        vol.dismount();
    }
}
