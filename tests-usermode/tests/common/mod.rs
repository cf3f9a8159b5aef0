//! Shared helpers of the behaviour tests: mounting a volume on the std platform, a probing
//! host that records every operation, synchronous request helpers, a reference cipher for
//! host-side checks, and a watchdog that turns a deadlock into a failure.
#![allow(dead_code)]

use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use vcdirect::crypto::{Algorithm, VolumeCipher, XtsCipher, MAX_KEY_AREA};
use vcdirect::platform::irql::Irql;
use vcdirect::platform::{
    Detached, HostDevice, HostIo, HostKind, HostLimits, KeptRead, Origin, RequestKind,
};
use vcdirect::registry::Gates;
use vcdirect::volume::{CounterSnapshot, LegacyReason, MountParams, Volume};
use vcdirect::Status;
use vcdirect_usermode::host::{MemoryHost, ReadyIo};
use vcdirect_usermode::mount::mount_params;
use vcdirect_usermode::request::{Buf, Completion, TestRequest, UNREAD};
use vcdirect_usermode::std_platform::StdPlatform;

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * 1024;

/// Host bytes before the data area (a VeraCrypt volume's data starts at 128 KiB).
pub const DATA_OFFSET: u64 = 128 * KIB;

/// How long any single wait may take before the test fails instead of hanging.
pub const WAIT: Duration = Duration::from_secs(60);

pub type Plat = StdPlatform<ProbeHost>;
pub type Vol = Arc<Volume<Plat>>;

pub const BOTH_ON: Gates = Gates {
    read: true,
    write: true,
};
pub const BOTH_OFF: Gates = Gates::OFF;

/// The test volumes' XTS master key.
pub fn master_key() -> [u8; 64] {
    let mut k = [0u8; 64];
    for (i, b) in k.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37).wrapping_add(11);
    }
    k
}

/// The reference cipher with the volumes' key.
pub fn cipher() -> XtsCipher {
    XtsCipher::new(&master_key())
}

/// The test volumes' master key area for any algorithm: [`master_key`], then more bytes for
/// the further ciphers of a cascade (an algorithm uses its first `key_len()` bytes).
pub fn key_area() -> [u8; MAX_KEY_AREA] {
    let mut k = [0u8; MAX_KEY_AREA];
    k[..64].copy_from_slice(&master_key());
    for (i, b) in k.iter_mut().enumerate().skip(64) {
        *b = (i as u8).wrapping_mul(91).wrapping_add(5);
    }
    k
}

/// The engine's cipher of `algorithm` with the volumes' key area.
pub fn cipher_of(algorithm: Algorithm) -> VolumeCipher {
    VolumeCipher::new(algorithm, &key_area()[..algorithm.key_len()])
}

/// Deterministic bytes for `(seed, len)`.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 30;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x ^= x >> 27;
        x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Mount parameters of a writable, non-hidden volume of `data_size` bytes at [`DATA_OFFSET`].
pub fn params(data_size: u64, gates: Gates) -> MountParams {
    mount_params(DATA_OFFSET, data_size, gates)
}

/// The same parameters with legacy fragments of `fragment` bytes.
pub fn with_fragment(mut p: MountParams, fragment: u32) -> MountParams {
    p.tunables.fragment_size = fragment;
    p
}

/// A probe host over a fresh memory medium big enough for `p` (64 KiB spare at the end).
pub fn host_for(p: &MountParams) -> ProbeHost {
    ProbeHost::new(MemoryHost::new(p.data_offset + p.data_size + 64 * KIB))
}

/// Mounts a volume with the test key (of `p.algorithm`: the first 64 bytes are
/// [`master_key`], all an AES volume uses).
pub fn mount(host: ProbeHost, p: MountParams) -> Vol {
    let key = key_area();
    Volume::mount(StdPlatform::new(0), host, &key[..p.algorithm.key_len()], p).expect("mount")
}

/// Which host operation was issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    pub write: bool,
    pub offset: u64,
    pub len: usize,
    pub addr: usize,
}

type Hook = Box<dyn FnOnce() + Send>;

/// The state behind a [`ProbeHost`].
pub struct ProbeInner {
    pub mem: MemoryHost,
    ops: Mutex<Vec<Op>>,
    in_flight: AtomicUsize,
    in_flight_max: AtomicUsize,
    /// Runs once, right after the first operation of the chosen direction moved its data.
    hook: Mutex<Option<(bool, Hook)>>,
    /// While true, every operation that starts blocks (after it is recorded) until released.
    held: Mutex<bool>,
    released: Condvar,
    /// The security context each operation was started in, and whether it was a detached
    /// read (issued by the dispatching thread).
    contexts: Mutex<Vec<(bool, vcdirect_usermode::security::Context)>>,
}

/// A host device that records every operation, counts operations in flight (started and not
/// yet waited for) and can run a hook after the first read or write. Clones share one medium.
#[derive(Clone)]
pub struct ProbeHost(Arc<ProbeInner>);

impl Deref for ProbeHost {
    type Target = ProbeInner;
    fn deref(&self) -> &ProbeInner {
        &self.0
    }
}

impl ProbeHost {
    pub fn new(mem: MemoryHost) -> Self {
        ProbeHost(Arc::new(ProbeInner {
            mem,
            ops: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            in_flight_max: AtomicUsize::new(0),
            hook: Mutex::new(None),
            held: Mutex::new(false),
            released: Condvar::new(),
            contexts: Mutex::new(Vec::new()),
        }))
    }

    /// From now on every operation that starts blocks (counted in flight) until [`release`].
    ///
    /// [`release`]: ProbeHost::release
    pub fn hold(&self) {
        *self.held.lock().unwrap() = true;
    }

    /// Lets the held operations and every later one go.
    pub fn release(&self) {
        *self.held.lock().unwrap() = false;
        self.released.notify_all();
    }

    /// Every operation so far, in issue order.
    pub fn ops(&self) -> Vec<Op> {
        self.ops.lock().unwrap().clone()
    }

    pub fn clear_ops(&self) {
        self.ops.lock().unwrap().clear();
    }

    /// Operations started and not yet finished.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    pub fn in_flight_max(&self) -> usize {
        self.in_flight_max.load(Ordering::SeqCst)
    }

    /// Runs `hook` after the first write (`write`) or read (`!write`) from now on.
    pub fn set_hook(&self, write: bool, hook: impl FnOnce() + Send + 'static) {
        *self.hook.lock().unwrap() = Some((write, Box::new(hook)));
    }

    /// The security context of every operation so far, with whether it was a detached read.
    pub fn contexts(&self) -> Vec<(bool, vcdirect_usermode::security::Context)> {
        self.contexts.lock().unwrap().clone()
    }

    fn started(&self, op: Op) {
        self.record_context(false);
        self.ops.lock().unwrap().push(op);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.in_flight_max.fetch_max(now, Ordering::SeqCst);
        let mut held = self.held.lock().unwrap();
        while *held {
            held = self.released.wait(held).unwrap();
        }
    }

    /// A detached operation `op`: refused while held; otherwise recorded, counted in flight
    /// until its end is reported, and started by `start` with a reporter that does both.
    fn detached(
        &self,
        op: Op,
        then: Detached,
        start: impl FnOnce(Detached) -> Result<(), Status>,
    ) -> Result<(), Status> {
        if *self.held.lock().unwrap() {
            return Err(Status::DeviceBusy);
        }
        self.record_context(true);
        self.ops.lock().unwrap().push(op);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.in_flight_max.fetch_max(now, Ordering::SeqCst);
        let started = start(Detached {
            done: Arc::new(Ended(self.clone(), then)),
            tag: 0,
        });
        if started.is_err() {
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
        self.after(op.write);
        started
    }

    fn record_context(&self, detached: bool) {
        self.contexts
            .lock()
            .unwrap()
            .push((detached, vcdirect_usermode::security::current()));
    }

    fn after(&self, write: bool) {
        let hook = {
            let mut h = self.hook.lock().unwrap();
            match h.as_ref() {
                Some((w, _)) if *w == write => h.take().map(|(_, f)| f),
                _ => None,
            }
        };
        if let Some(f) = hook {
            f();
        }
    }
}

/// A started operation of a [`ProbeHost`].
pub struct ProbeIo<'a> {
    inner: Option<ReadyIo<'a>>,
    host: &'a ProbeInner,
}

impl HostIo for ProbeIo<'_> {
    fn wait(mut self) -> Result<usize, Status> {
        let io = self.inner.take().expect("waited once");
        let r = io.wait();
        self.host.in_flight.fetch_sub(1, Ordering::SeqCst);
        r
    }
}

impl Drop for ProbeIo<'_> {
    fn drop(&mut self) {
        if let Some(io) = self.inner.take() {
            drop(io);
            self.host.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl HostDevice for ProbeHost {
    type Io<'a> = ProbeIo<'a>;
    type Read<'a> = KeptRead<'a, ProbeIo<'a>>;

    fn kind(&self) -> HostKind {
        self.mem.kind()
    }
    fn size(&self) -> u64 {
        self.mem.size()
    }
    fn limits(&self) -> HostLimits {
        self.mem.limits()
    }
    fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> ProbeIo<'a> {
        self.started(Op {
            write: false,
            offset,
            len: buf.len(),
            addr: buf.as_ptr() as usize,
        });
        let io = self.mem.start_read(offset, buf);
        self.after(false);
        ProbeIo {
            inner: Some(io),
            host: &self.0,
        }
    }
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
        self.started(Op {
            write: false,
            offset,
            len: buf.len(),
            addr: buf.as_ptr() as usize,
        });
        let read = self.mem.start_read_kept(offset, buf).map_io(|io| ProbeIo {
            inner: Some(io),
            host: &self.0,
        });
        self.after(false);
        read
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> ProbeIo<'a> {
        self.started(Op {
            write: true,
            offset,
            len: buf.len(),
            addr: buf.as_ptr() as usize,
        });
        let io = self.mem.start_write(offset, buf);
        self.after(true);
        ProbeIo {
            inner: Some(io),
            host: &self.0,
        }
    }
    /// As `start_read_detached`, for a write.
    fn start_write_detached(
        &self,
        offset: u64,
        buf: &[u8],
        origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        let op = Op {
            write: true,
            offset,
            len: buf.len(),
            addr: buf.as_ptr() as usize,
        };
        self.detached(op, then, |then| {
            self.mem.start_write_detached(offset, buf, origin, then)
        })
    }
    /// A held host refuses (nothing starts: the workers serve the read and block in it);
    /// otherwise recorded like every operation and carried out by the medium, which reports
    /// the end at once.
    fn start_read_detached(
        &self,
        offset: u64,
        buf: &mut [u8],
        origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        let op = Op {
            write: false,
            offset,
            len: buf.len(),
            addr: buf.as_ptr() as usize,
        };
        self.detached(op, then, |then| {
            self.mem.start_read_detached(offset, buf, origin, then)
        })
    }
    fn flush(&self) -> Result<(), Status> {
        self.mem.flush()
    }
}

/// A detached read of a [`ProbeHost`] ends: no longer in flight, then the engine is told.
/// (The test host allocates one per read; the engine does not.)
struct Ended(ProbeHost, Detached);

impl vcdirect::platform::DetachedDone for Ended {
    fn detached_ended(&self, _tag: usize, result: Result<usize, Status>) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.1.clone().report(result);
    }
}

/// Writes `plain` at volume offset `offset` straight to the medium, encrypted with the
/// absolute data-unit numbers (host offset / 512), bypassing the engine.
pub fn put_plain(mem: &MemoryHost, data_offset: u64, offset: u64, plain: &[u8]) {
    put_plain_as(vcdirect::crypto::AES, mem, data_offset, offset, plain);
}

/// [`put_plain`] under `algorithm` with the test key area.
pub fn put_plain_as(
    algorithm: Algorithm,
    mem: &MemoryHost,
    data_offset: u64,
    offset: u64,
    plain: &[u8],
) {
    let c = cipher_of(algorithm);
    let mut enc = plain.to_vec();
    c.encrypt(&mut enc, (data_offset + offset) / 512);
    let lim = mem.limits();
    let step = (lim.max_transfer as usize).min(64 * 1024);
    let mut buf = Buf::zeroed_aligned(step, 4096);
    for (i, chunk) in enc.chunks(step).enumerate() {
        let b = &mut buf.as_mut_slice()[..chunk.len()];
        b.copy_from_slice(chunk);
        let at = data_offset + offset + (i * step) as u64;
        assert_eq!(mem.write(at, b), Ok(chunk.len()), "host write at {at}");
    }
}

/// The plaintext of `len` volume bytes at `offset`, decrypted from the medium.
pub fn get_plain(mem: &MemoryHost, data_offset: u64, offset: u64, len: usize) -> Vec<u8> {
    let snap = mem.snapshot();
    let start = (data_offset + offset) as usize;
    let mut out = snap[start..start + len].to_vec();
    cipher().decrypt(&mut out, (data_offset + offset) / 512);
    out
}

/// Dispatches `req`-building closure's request and returns the receiver of its completion.
pub fn submit(
    vol: &Vol,
    build: impl FnOnce(Box<dyn FnOnce(Completion) + Send>) -> TestRequest,
) -> mpsc::Receiver<Completion> {
    let (tx, rx) = mpsc::channel();
    let req = build(Box::new(move |c| {
        let _ = tx.send(c);
    }));
    // Reads and writes at DISPATCH_LEVEL, as Windows may dispatch them (W9), unless the test
    // chose PASSIVE_LEVEL (`set_dispatch_level`).
    vcdirect_usermode::irql::dispatch_at(DISPATCH_LEVEL.with(|l| l.get()), vol, req);
    rx
}

std::thread_local! {
    static DISPATCH_LEVEL: std::cell::Cell<Irql> = const { std::cell::Cell::new(Irql::Dispatch) };
}

/// The level [`submit`] dispatches reads and writes at on this thread from now on
/// (PASSIVE_LEVEL: the dispatching thread may issue small direct reads itself).
pub fn set_dispatch_level(level: Irql) {
    DISPATCH_LEVEL.with(|l| l.set(level));
}

/// Waits for a completion (fails the test after [`WAIT`]).
pub fn wait(rx: &mpsc::Receiver<Completion>) -> Completion {
    rx.recv_timeout(WAIT)
        .expect("request did not complete in time")
}

/// Waits until `ready` holds (fails the test with `what` after [`WAIT`]). For tests that need
/// some traffic to have happened before they act: a fixed sleep is too short on a loaded machine.
pub fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !ready() {
        assert!(start.elapsed() < WAIT, "not reached after {WAIT:?}: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits until the volume holds no admitted request (fails the test after [`WAIT`]). The upper
/// completion runs before the request leaves the volume's rundown (so dismount waits for the
/// completion routine), so right after a completion arrives the count may still be 1 briefly.
pub fn wait_until_idle(vol: &Vol) {
    wait_for("no request in flight", || vol.in_flight() == 0);
}

pub fn submit_read(vol: &Vol, offset: u64, len: u32) -> mpsc::Receiver<Completion> {
    submit(vol, |done| TestRequest::read(offset, len, done))
}

pub fn submit_write(vol: &Vol, offset: u64, data: &[u8]) -> mpsc::Receiver<Completion> {
    submit(vol, |done| TestRequest::write(offset, data, done))
}

/// A synchronous read: (status, information, bytes).
pub fn read(vol: &Vol, offset: u64, len: u32) -> (Status, usize, Vec<u8>) {
    let c = wait(&submit_read(vol, offset, len));
    let bytes = c.buf.map(|b| b.as_slice().to_vec()).unwrap_or_default();
    (c.status, c.information, bytes)
}

/// A synchronous write: (status, information).
pub fn write(vol: &Vol, offset: u64, data: &[u8]) -> (Status, usize) {
    let c = wait(&submit_write(vol, offset, data));
    (c.status, c.information)
}

/// A synchronous request of any shape (offset may be negative, buffer may be absent).
pub fn raw_request(
    vol: &Vol,
    kind: RequestKind,
    offset: i64,
    length: u32,
    buf: Option<Buf>,
) -> Completion {
    wait(&submit(vol, |done| {
        TestRequest::new(kind, offset, length, buf, done)
    }))
}

/// A buffer of `len` [`UNREAD`] bytes whose address is `page_offset` bytes past a page
/// boundary (a read must overwrite all of it; a write fills it first).
pub fn buf_at_page_offset(len: usize, page_offset: usize) -> Buf {
    use vcdirect::platform::IoBuf;
    let mut b = Buf::unread_aligned(len + page_offset, 4096);
    let _ = b.split_to(page_offset);
    assert_eq!(b.address() % 4096, page_offset);
    b
}

/// True when every byte of `b` is still [`UNREAD`] (nothing was transferred into it).
pub fn unread(b: &[u8]) -> bool {
    b.iter().all(|x| *x == UNREAD)
}

/// Counters: legacy routings for one reason.
pub fn by_reason(c: &CounterSnapshot, reason: LegacyReason) -> u64 {
    let i = LegacyReason::ALL.iter().position(|r| *r == reason).unwrap();
    c.legacy_by_reason[i]
}

/// Runs `f` on its own thread; fails the test if it does not finish within `timeout` (a
/// deadlock becomes a failure instead of a hang). Panics inside `f` are passed on.
pub fn with_watchdog<T: Send + 'static>(
    timeout: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("test-scenario".into())
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            let _ = tx.send(r);
        })
        .expect("spawn scenario");
    match rx.recv_timeout(timeout) {
        Ok(Ok(v)) => {
            let _ = handle.join();
            v
        }
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("{what}: did not finish within {timeout:?} (deadlock?)"),
    }
}

/// The current thread's name ("" when unnamed).
pub fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_string()
}

/// One request of a differential workload: a read or write of `len` bytes at `offset`, its
/// buffer at `page_offset` in its page, written data from `pattern(seed, len)`.
#[derive(Clone, Debug)]
pub struct Req {
    pub write: bool,
    pub offset: u64,
    pub len: usize,
    pub page_offset: usize,
    pub seed: u64,
}

/// What one request of [`run`] ended with: its status, its byte count, and a read's bytes.
pub struct Outcome {
    pub status: Status,
    pub information: usize,
    pub read: Option<Vec<u8>>,
}

/// Runs `reqs` one after the other on `vol`; a write's buffer must come back unchanged (the
/// caller's buffer is never encrypted in place).
pub fn run(vol: &Vol, reqs: &[Req]) -> Vec<Outcome> {
    reqs.iter()
        .map(|r| {
            let mut buf = buf_at_page_offset(r.len, r.page_offset);
            let kind = if r.write {
                buf.as_mut_slice().copy_from_slice(&pattern(r.seed, r.len));
                RequestKind::Write
            } else {
                RequestKind::Read
            };
            let c = raw_request(vol, kind, r.offset as i64, r.len as u32, Some(buf));
            let back = c.buf.expect("buffer back").as_slice().to_vec();
            if r.write {
                // The caller's buffer is never encrypted in place.
                assert!(
                    back == pattern(r.seed, r.len),
                    "write buffer modified: {r:?}"
                );
            }
            Outcome {
                status: c.status,
                information: c.information,
                read: (!r.write).then_some(back),
            }
        })
        .collect()
}
