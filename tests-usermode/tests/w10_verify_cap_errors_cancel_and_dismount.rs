//! W10, R13: IOCTL_DISK_VERIFY served by the engine, on both paths (gates off: the legacy
//! queue; gates on: the direct workers): its length is capped (`disk_ioctl::VERIFY_MAX`: over
//! it, STATUS_INVALID_PARAMETER and nothing read; misaligned, past the end or negative as a
//! read), a failing host read's status is what it reports (a short read STATUS_INVALID_PARAMETER),
//! a VERIFY waiting its turn can be cancelled (nothing read), and dismount waits for a queued
//! one (R13). Its turn, thread and allocations: w10_verify_served_by_engine_threads.rs.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use vcdirect::disk_ioctl::VERIFY_MAX;
use vcdirect::platform::irql::Irql;
use vcdirect::platform::{Detached, HostDevice, HostKind, HostLimits, KeptRead, Origin};
use vcdirect::registry::Gates;
use vcdirect::volume::Volume;
use vcdirect::Status;
use vcdirect_usermode::host::{MemoryHost, ReadyIo};
use vcdirect_usermode::irql::dispatch_at;
use vcdirect_usermode::mount::mount_params;
use vcdirect_usermode::request::{Completion, TestRequest};
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
    let platform = platform();
    for gates in [Gates::OFF, DIRECT] {
        let (vol, host) = mount_on(&platform, gates);
        let path = path_name(gates);
        host.watch(0..u64::MAX);
        // The cap itself is served: 4 MiB, read whole.
        let c = verify(&vol, 0, VERIFY_MAX);
        assert_eq!((c.status, c.information), (Status::Success, 0), "{path}");
        assert_eq!(host.watched().3, u64::from(VERIFY_MAX), "{path}");
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
    let platform = platform();
    let data_error = Status::Host(0xC000_009C); // STATUS_DEVICE_DATA_ERROR
    for gates in [Gates::OFF, DIRECT] {
        let (vol, host) = mount_on(&platform, gates);
        let path = path_name(gates);
        // The third piece fails: the status is the host's, nothing after it is read.
        let bad = DATA_OFFSET + VERIFY_AT + 2 * u64::from(PIECE);
        host.mem.fail_range(bad..bad + 512, data_error);
        let before = vol.counters.snapshot();
        let c = verify(&vol, VERIFY_AT as i64, VERIFY_LEN);
        assert_eq!((c.status, c.information), (data_error, 0), "{path}");
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

#[test]
fn w10_a_verify_waiting_its_turn_is_cancelled_and_reads_nothing() {
    let platform = platform();
    for gates in [Gates::OFF, DIRECT] {
        let (vol, host) = mount_on(&platform, gates);
        let path = path_name(gates);
        let busy = hold_the_path(&vol, &host, gates);
        host.watch(DATA_OFFSET + VERIFY_AT..DATA_OFFSET + VERIFY_AT + u64::from(VERIFY_LEN));
        let (tx, rx) = std::sync::mpsc::channel();
        let request = TestRequest::verify(VERIFY_AT as i64, VERIFY_LEN, move |c| {
            let _ = tx.send(c);
        });
        let handle = request.cancel_handle();
        dispatch_at(Irql::Dispatch, &vol, request);
        let cancel_vol = Arc::clone(&vol);
        assert!(
            handle.cancel(|key| cancel_vol.cancel(key)),
            "{path}: the queued VERIFY's cancel routine ran"
        );
        let c = rx
            .recv_timeout(WAIT)
            .expect("the cancelled VERIFY completed");
        assert_eq!((c.status, c.information), (Status::Cancelled, 0), "{path}");
        host.release();
        wait_for("the busy reads completed", || {
            busy.load(Ordering::SeqCst) == BUSY
        });
        assert_eq!(
            host.watched(),
            (0, 0, 0, 0),
            "{path}: the cancelled VERIFY read"
        );
        vol.dismount();
    }
}

#[test]
fn r13_dismount_waits_for_a_queued_verify() {
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
