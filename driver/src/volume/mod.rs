//! A mounted volume: geometry, validation, path choice, ordering, and the mount/dismount
//! lifecycle.
//!
//! Owns: the checks VeraCrypt makes before a request reaches its queue (statuses of
//! docs/design.md §4), hidden-volume protection, the choice between the legacy queue and the
//! direct path (recorded with its reason), the volume's range lock, the VERIFYs' line (one in
//! service, the others waiting their turn), and dismount (docs/review.md R13: refuse the waiting
//! VERIFYs, close admission, serve what was admitted, wait for every child request, erase
//! keys).
//! Never: does host I/O or crypto itself.
//! Hands to: `queue` or `direct`, granted requests (each path gets the volume's
//! `PathContext` and gives every job back through `Finisher`, which the volume implements);
//! `completion`, finished ones.

mod cancel;
pub mod geometry;
pub mod host_type;

/// The counters a volume shows (defined with what both paths share, in `io`).
pub use crate::io::{CounterSnapshot, Counters, LegacyReason, VolumeMemory};

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::ops::Range;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::barrier::{Access, RangeLock, Ticket};
use crate::completion::{Carrier, Completer, Finished};
use crate::crypto::{Algorithm, CryptoPool, VolumeKey, DATA_UNIT};
use crate::direct::DirectPath;
use crate::disk_ioctl::VERIFY_MAX;
use crate::faults::{self, Fault};
use crate::io::{
    try_vec, Finisher, Geometry, IoJob, JobKind, MemoryBook, Path, PathContext, WriteGeneration,
    MAX_DIRECT_REQUEST, RANGE_ENTRIES,
};
use crate::platform::{
    DetachedDone, HostDevice, HostKind, IoBuf, Lock, Platform, RequestKind, RequestList, Rundown,
    Thread, ThreadRole, UpperRequest,
};
use crate::queue::LegacyQueue;
use crate::registry::{direct_read_configured, direct_write_configured, Gates, Tunables};
use crate::Status;

/// The engine threads one volume runs at most: its completion thread, the legacy queue's
/// three, the direct path's workers (room for them is reserved at mount).
const MAX_THREADS: usize = 1 + 3 + crate::direct::WORKERS;

/// What the mount request says about the volume.
#[derive(Clone, Debug)]
pub struct MountParams {
    /// Host byte offset of the volume's data area (the absolute data-unit numbers start here).
    pub data_offset: u64,
    /// Size of the data area in bytes.
    pub data_size: u64,
    /// Sector size the volume presents (512 for the volumes VeraCrypt creates on 512e disks).
    pub sector_size: u32,
    /// Mounted read-only.
    pub read_only: bool,
    /// This is a hidden volume.
    pub hidden: bool,
    /// Outer volume with hidden-volume protection: the protected host byte range.
    pub protected_range: Option<Range<u64>>,
    /// The gates, copied from the driver's global snapshot at mount (docs/review.md R6).
    pub gates: Gates,
    /// The legacy queue's tunables.
    pub tunables: Tunables,
    /// The volume's encryption algorithm (its master key area is `algorithm.key_len()` bytes).
    pub algorithm: Algorithm,
}

/// The effective configuration of a mounted volume (what `vcctl status` shows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effective {
    /// Gates copied at mount.
    pub gates: Gates,
    /// Reads can take the direct path.
    pub direct_read: bool,
    /// Writes can take the direct path (R7: only when they really can).
    pub direct_write: bool,
}

struct Admission<R: UpperRequest> {
    lock: RangeLock,
    /// Jobs registered but not granted yet, by ticket index.
    waiting: Vec<Option<IoJob<R>>>,
    /// Jobs that found the range pool full, in arrival order, linked through their requests
    /// (never full, allocates nothing).
    backlog: R::List,
    /// Tickets a release just granted (capacity fixed at mount: no allocation per request).
    granted: Vec<Ticket>,
}

/// The VERIFYs of a volume: the one in service and those waiting their turn.
struct VerifyLine<R: UpperRequest> {
    /// A VERIFY is in service (admitted into the range ordering, not yet finished).
    busy: bool,
    /// Dismount began: no waiting VERIFY is served any more.
    closed: bool,
    /// VERIFYs waiting for the one in service, in arrival order, parked with their cancel hook
    /// armed (linked through their requests: never full, allocates nothing, W6). Each holds
    /// its place among the admitted requests (`Volume::admitted`). A keyed list: the cancel
    /// routine takes a waiting VERIFY out by its key in constant time (`RequestList::remove_key`,
    /// the in-line flag), however many wait.
    waiting: R::List,
}

/// A mounted volume.
pub struct Volume<P: Platform> {
    /// What both paths read and count: host, key, platform, geometry, counters, encryption
    /// pool, write generation.
    context: Arc<PathContext<P>>,
    pub(crate) params: MountParams,
    effective: Effective,
    order: P::Lock<Admission<P::Request>>,
    /// Cancelled requests between their cancel routine and the path that took them.
    cancels: P::Lock<cancel::CancelBook<P::Request>>,
    legacy: Arc<LegacyQueue<P>>,
    direct: Arc<DirectPath<P>>,
    completer: Arc<Completer<P>>,
    /// Admitted requests not yet handed to the completion stage.
    admitted: Rundown<P>,
    threads: P::Lock<Vec<P::Thread>>,
    protection_tripped: AtomicBool,
    /// IOCTL_DISK_VERIFYs one at a time: at most one per volume holds a place in the range
    /// ordering and a path's FIFO; the others wait here, in arrival order (docs/design.md,
    /// "IOCTL_DISK_VERIFY").
    verifies: P::Lock<VerifyLine<P::Request>>,
    /// Path counters (the same ones the paths' context counts in).
    pub counters: Arc<Counters>,
    dismounted: AtomicBool,
}

/// `platform.try_arc(make()?)` in a frame of its own: each large value of a mount is built
/// and moved into its `Arc` there, so `Volume::build`'s frame holds only the `Arc`s (the
/// kernel's control-path stack budget, scripts/check-sys.sh).
#[inline(never)]
fn shared<P: Platform, T>(
    platform: &P,
    make: impl FnOnce() -> Result<T, Status>,
) -> Result<Arc<T>, Status> {
    platform.try_arc(make()?)
}

impl<P: Platform> Volume<P> {
    /// Mounts a volume on `host` with its master key area (`params.algorithm.key_len()` bytes:
    /// 64 for AES, up to 192 for a three-cipher cascade): starts the legacy queue's
    /// three threads, the completion thread and, when a gate makes it usable, 8 direct workers.
    pub fn mount(
        platform: P,
        host: P::Host,
        master_key: &[u8],
        params: MountParams,
    ) -> Result<Arc<Self>, Status> {
        let volume = Self::build(platform, host, master_key, params)?;
        if let Err(status) = volume.start_threads() {
            volume.dismount();
            return Err(status);
        }
        Ok(volume)
    }

    /// Checks the parameters and makes the volume, its paths and tables (no thread yet). Not
    /// inlined: the values it builds on its stack (moved into their `Arc`s) stay out of the
    /// frame under which the threads are started (the kernel's control-path stack budget).
    #[inline(never)]
    fn build(
        platform: P,
        host: P::Host,
        master_key: &[u8],
        params: MountParams,
    ) -> Result<Arc<Self>, Status> {
        let sector = params.sector_size;
        if sector < 512
            || !sector.is_power_of_two()
            || !params.data_size.is_multiple_of(u64::from(sector))
        {
            return Err(Status::InvalidParameter);
        }
        let end = params
            .data_offset
            .checked_add(params.data_size)
            .ok_or(Status::InvalidParameter)?;
        if end > host.size() || !params.data_offset.is_multiple_of(DATA_UNIT as u64) {
            return Err(Status::InvalidParameter);
        }
        let raw = host.kind() == HostKind::RawDevice;
        let effective = Effective {
            gates: params.gates,
            direct_read: direct_read_configured(params.gates, raw),
            direct_write: direct_write_configured(
                params.gates,
                !params.read_only,
                params.hidden,
                params.protected_range.is_some(),
                raw,
            ),
        };
        let tunables = params.tunables;
        let crypto_pool = CryptoPool::new(platform.cpu_count(), tunables.free_cpu_count as usize);
        // Every box, shared value, table and buffer fallibly (W6): a failure fails the mount
        // with STATUS_INSUFFICIENT_RESOURCES, and what was made is dropped.
        let counters = platform.try_arc(Counters::default())?;
        let context = shared(&platform, || {
            Ok(PathContext {
                key: VolumeKey::with_algorithm(&platform, params.algorithm, master_key)?,
                geometry: Geometry {
                    data_offset: params.data_offset,
                    data_size: params.data_size,
                    sector_size: params.sector_size,
                },
                counters: Arc::clone(&counters),
                crypto_pool,
                writes: WriteGeneration::default(),
                memory: MemoryBook::default(),
                host,
                platform: platform.clone(),
            })
        })?;
        let legacy = shared(&platform, || {
            LegacyQueue::new(Arc::clone(&context), &tunables, !params.read_only)
        })?;
        let direct = shared(&platform, || {
            DirectPath::new(Arc::clone(&context), effective.direct_write)
        })?;
        let completer = shared(&platform, || {
            Completer::new(&platform, tunables.max_work_items)
        })?;
        shared(&platform, || {
            let mut waiting = try_vec(RANGE_ENTRIES)?;
            waiting.resize_with(RANGE_ENTRIES, || None);
            Ok(Volume {
                order: P::Lock::new(Admission {
                    lock: RangeLock::with_capacity(RANGE_ENTRIES)?,
                    waiting,
                    backlog: RequestList::new(),
                    granted: try_vec(RANGE_ENTRIES)?,
                }),
                cancels: P::Lock::new(cancel::CancelBook::new()?),
                legacy,
                direct,
                completer,
                admitted: Rundown::new()?,
                verifies: P::Lock::new(VerifyLine {
                    busy: false,
                    closed: false,
                    waiting: RequestList::new_keyed(),
                }),
                threads: P::Lock::new(try_vec(MAX_THREADS)?),
                protection_tripped: AtomicBool::new(false),
                counters,
                dismounted: AtomicBool::new(false),
                effective,
                params,
                context,
            })
        })
    }

    /// Starts the completion thread, then the paths' threads. Every thread is recorded in
    /// `threads` as soon as it runs: when one fails to start, `mount`'s dismount stops and
    /// joins all that did.
    fn start_threads(self: &Arc<Self>) -> Result<(), Status> {
        // Room for every thread was reserved at mount (`MAX_THREADS`: the completion thread,
        // the legacy queue's three, the direct workers), so no push allocates.
        let keep = &mut |thread| self.threads.with(|threads| threads.push(thread));
        let completer = Arc::clone(&self.completer);
        let platform = &self.context.platform;
        let carrier: Weak<dyn Carrier> = Arc::downgrade(self) as Weak<Self>;
        self.completer.set_carrier(carrier);
        keep(platform.spawn(
            ThreadRole::Completion,
            platform.try_box(move || completer.run())?,
        )?);
        self.legacy.start(self, keep)?;
        if self.effective.direct_read || self.effective.direct_write {
            self.direct.start(self, self.effective.direct_write, keep)?;
        }
        Ok(())
    }

    /// The effective gates and path configuration (docs/review.md R6, R7).
    pub fn effective(&self) -> Effective {
        self.effective
    }

    /// Bytes the volume's engine buffers hold, by purpose (nonpaged pool in the kernel):
    /// counted as each was allocated at mount; they are held until dismount.
    pub fn memory(&self) -> VolumeMemory {
        self.context.memory.snapshot()
    }

    /// Volume size in bytes.
    pub fn size(&self) -> u64 {
        self.params.data_size
    }

    /// The host device.
    pub fn host(&self) -> &P::Host {
        &self.context.host
    }

    /// The volume key (for status and tests).
    pub fn key(&self) -> &VolumeKey<P> {
        &self.context.key
    }

    /// Takes an upper request. Never blocks: it completes the request at once (invalid, or a
    /// flush on a volume without direct writes) or queues it.
    pub fn dispatch(self: &Arc<Self>, mut request: P::Request) {
        let kind = match request.kind() {
            RequestKind::Read => JobKind::Read,
            RequestKind::Write => JobKind::Write,
            RequestKind::Flush => {
                if !self.effective.direct_write {
                    // VeraCrypt's behaviour: success at once; write-through gives durability.
                    Counters::add(&self.counters.immediate_flushes, 1);
                    request.complete(Status::Success, 0);
                    return;
                }
                JobKind::Flush
            }
            RequestKind::Verify => JobKind::Verify,
            RequestKind::Other(_) => {
                Counters::add(&self.counters.rejected, 1);
                request.complete(Status::InvalidParameter, 0);
                return;
            }
        };
        let (offset, length) = match self.validate(&request, kind) {
            Ok(Some(range)) => range,
            Ok(None) => {
                request.complete(Status::Success, 0);
                return;
            }
            Err(status) => {
                Counters::add(&self.counters.rejected, 1);
                request.complete(status, 0);
                return;
            }
        };
        #[cfg(feature = "fault-switches")]
        if kind == JobKind::Verify && faults::is_on(Fault::VerifyOnCallerThread) {
            let status = self.verify_on_this_thread(offset, length);
            request.complete(status, 0);
            return;
        }
        let buf = if matches!(kind, JobKind::Flush | JobKind::Verify) {
            None
        } else {
            match request.take_buffer() {
                Some(buf) if buf.len() == length as usize => Some(buf),
                Some(buf) => {
                    request.put_buffer(buf);
                    None
                }
                None => None,
            }
        };
        let buf = match (kind, buf) {
            (JobKind::Flush | JobKind::Verify, _) => None,
            (_, Some(buf)) => Some(buf),
            (_, None) => {
                // docs/review.md R14: no usable buffer, a clean failure on both paths.
                Counters::add(&self.counters.rejected, 1);
                request.complete(Status::InvalidUserBuffer, 0);
                return;
            }
        };
        if !self.admitted.enter() {
            Counters::add(&self.counters.rejected, 1);
            if let Some(buf) = buf {
                request.put_buffer(buf);
            }
            request.complete(Status::DeviceNotReady, 0);
            return;
        }
        // Already cancelled: complete at once, nothing issued. The cancel hook itself is armed
        // only when the job enters a path's FIFO (`JobQueue::push`, under the FIFO's lock) or
        // the VERIFYs' line, so a cancel routine never has to look for a job waiting for its
        // range (docs/review.md W6: the fired keys stay within their room); one cancelled
        // while it waits completes as it reaches the FIFO.
        if request.is_cancelled() {
            Counters::add(&self.counters.failed, 1);
            if let Some(buf) = buf {
                request.put_buffer(buf);
            }
            request.complete(Status::Cancelled, 0);
            self.admitted.exit();
            return;
        }
        let job = IoJob {
            request,
            buf,
            kind,
            offset,
            length,
            ticket: Ticket::placeholder(),
            path: Path::Legacy,
        };
        // One VERIFY at a time (FILE_ANY_ACCESS: any handle may send them): another waits in
        // the VERIFYs' line until the one in service is finished (`finish`). The fault switch
        // lifts the limit.
        let job = if kind == JobKind::Verify && !faults::is_on(Fault::VerifyUnlimited) {
            match self.verify_turn(job) {
                Some(job) => job,
                None => return,
            }
        } else {
            job
        };
        if let Some(job) = self.enter_order(job) {
            if let Err(job) = self.start_here(job) {
                self.finish_cancelled(job);
            }
        }
    }

    /// Chooses an admitted job's path and registers it in the range ordering: the job when
    /// its range is granted at once (the caller starts it), else `None` (it waits).
    fn enter_order(&self, mut job: IoJob<P::Request>) -> Option<IoJob<P::Request>> {
        // A VERIFY has no caller buffer: it is read into an engine buffer, aligned for the
        // host (address 0 stands for it).
        let address = job.buf.as_ref().map_or(0, |b| b.address());
        job.path = match job.kind {
            JobKind::Flush => Path::Direct,
            kind => match self.choose_path(kind, job.length, address) {
                Ok(()) => Path::Direct,
                Err(reason) => {
                    // A VERIFY moves no caller data: the reasons (R6, R10) count reads and
                    // writes only.
                    if kind != JobKind::Verify {
                        self.counters.legacy_reason(reason);
                    }
                    Path::Legacy
                }
            },
        };
        let granted = self.order.with(|admission| {
            if !admission.backlog.is_empty() || admission.lock.is_full() {
                admission.backlog.push_back(job.park());
                return None;
            }
            Some(Self::register(admission, job))
        });
        match granted {
            Some(Some(job)) => Some(job),
            Some(None) => {
                Counters::add(&self.counters.range_waits, 1);
                None
            }
            None => None,
        }
    }

    /// An admitted VERIFY takes its turn: the VERIFY when none is in service (it is served
    /// now), else `None`: it waits in the line with its cancel hook armed (one already
    /// cancelled completes STATUS_CANCELLED; during dismount, STATUS_DEVICE_NOT_READY).
    fn verify_turn(&self, job: IoJob<P::Request>) -> Option<IoJob<P::Request>> {
        let refused = self.verifies.with(|line| {
            if !line.busy {
                line.busy = true;
                return Ok(Some(job));
            }
            if line.closed {
                return Err((job.park(), Status::DeviceNotReady));
            }
            if faults::is_on(Fault::VerifyRefusedWhenBusy) {
                return Err((job.park(), Status::DeviceBusy));
            }
            let mut request = job.park();
            if !request.arm_cancel() {
                return Err((request, Status::Cancelled));
            }
            line.waiting.push_back(request);
            Ok(None)
        });
        match refused {
            Ok(job) => job,
            Err((request, status)) => {
                self.verify_unserved(request, status);
                None
            }
        }
    }

    /// A VERIFY that waited in the line (or would have) ends unserved with `status`
    /// (cancelled, or refused at dismount): nothing read, no range held, its admission
    /// released.
    fn verify_unserved(&self, request: P::Request, status: Status) {
        if status == Status::Cancelled {
            Counters::add(&self.counters.failed, 1);
        } else {
            Counters::add(&self.counters.rejected, 1);
        }
        self.completer.push(Finished {
            request,
            status,
            information: 0,
        });
        self.admitted.exit();
    }

    /// The VERIFY in service is finished: the next waiting one (in arrival order) is handed
    /// over, claimed from its cancel routine, to be admitted like a new one; `None` when none
    /// waits or dismount began (the line is then free).
    fn verify_next(&self) -> Option<IoJob<P::Request>> {
        loop {
            let request = self.verifies.with(|line| {
                let next = if line.closed {
                    None
                } else {
                    line.waiting.pop_front()
                };
                line.busy = next.is_some();
                next
            });
            // A waiting VERIFY whose cancel routine won is completed cancelled (here or by the
            // routine): the next one is tried. The line stays busy meanwhile: no new VERIFY
            // overtakes the waiting ones.
            if let Some(job) = self.claim_waiting_verify(request?) {
                return Some(job);
            }
        }
    }

    /// The VERIFY in service is finished: the next waiting one is admitted on this thread like
    /// a new one (its range after those just released). Returns it, parked, when it was
    /// cancelled before it reached its path: the caller finishes it (a loop, not a recursion).
    /// Not inlined: `finish`'s frame stays small (the cancel path's stack budget).
    #[inline(never)]
    fn verify_hand_over(&self) -> Option<P::Request> {
        let job = self.enter_order(self.verify_next()?)?;
        self.start(job).err().map(IoJob::park)
    }

    /// Dismount: every waiting VERIFY completes STATUS_DEVICE_NOT_READY, one at a time (each
    /// claimed from its cancel routine first); only the one in service is served (R13).
    fn verify_refuse_waiting(&self) {
        loop {
            let next = self.verifies.with(|line| {
                line.closed = true;
                line.waiting.pop_front()
            });
            let Some(request) = next else {
                return;
            };
            if let Some(job) = self.claim_waiting_verify(request) {
                self.verify_unserved(job.park(), Status::DeviceNotReady);
            }
        }
    }

    /// Registers `job`; returns it when granted at once, otherwise parks it.
    fn register(
        admission: &mut Admission<P::Request>,
        mut job: IoJob<P::Request>,
    ) -> Option<IoJob<P::Request>> {
        let access = match job.kind {
            JobKind::Read | JobKind::Verify => Access::Read,
            JobKind::Write => Access::Write,
            JobKind::Flush => Access::Flush,
        };
        let range = match access {
            Access::Flush => 0..u64::MAX,
            _ => job.offset..job.offset + u64::from(job.length),
        };
        // Called only while an entry is free; should none be, the job waits in the backlog.
        let Some((ticket, granted)) = admission.lock.register(range, access) else {
            admission.backlog.push_back(job.park());
            return None;
        };
        job.ticket = ticket;
        if granted {
            Some(job)
        } else {
            admission.waiting[ticket.index()] = Some(job);
            None
        }
    }

    /// The checks VeraCrypt makes, in its order. `Ok(None)`: a zero-length transfer. A VERIFY
    /// is checked as a read, after its length cap ([`VERIFY_MAX`]).
    fn validate(&self, request: &P::Request, kind: JobKind) -> Result<Option<(u64, u32)>, Status> {
        if kind == JobKind::Flush {
            return Ok(Some((0, 0)));
        }
        // Read once: what is checked here is what is served (the job and its parked note carry
        // it; nothing reads the request's range again).
        let (offset, length) = (request.offset(), request.length());
        if kind == JobKind::Verify && length > VERIFY_MAX {
            return Err(Status::InvalidParameter);
        }
        if kind == JobKind::Write && self.params.read_only {
            return Err(Status::MediaWriteProtected);
        }
        if offset < 0 {
            return Err(Status::InvalidParameter);
        }
        let offset = offset as u64;
        let sector = u64::from(self.params.sector_size);
        if !offset.is_multiple_of(sector) || !u64::from(length).is_multiple_of(sector) {
            return Err(Status::InvalidParameter);
        }
        let end = offset
            .checked_add(u64::from(length))
            .ok_or(Status::InvalidParameter)?;
        if end > self.params.data_size {
            return Err(Status::InvalidParameter);
        }
        if length == 0 {
            return Ok(None);
        }
        if kind == JobKind::Write {
            if let Some(protected) = &self.params.protected_range {
                if self.protection_tripped.load(Ordering::Acquire) {
                    // After the first refusal every write fails, like VeraCrypt.
                    return Err(Status::InvalidParameter);
                }
                let host_start = self.params.data_offset + offset;
                let host_end = host_start + u64::from(length);
                if host_start < protected.end && protected.start < host_end {
                    self.protection_tripped.store(true, Ordering::Release);
                    return Err(Status::InvalidParameter);
                }
            }
        }
        Ok(Some((offset, length)))
    }

    /// Eligibility for the direct path, decided once per request.
    fn choose_path(&self, kind: JobKind, length: u32, address: usize) -> Result<(), LegacyReason> {
        let host = &self.context.host;
        if host.kind() == HostKind::FileContainer {
            return Err(LegacyReason::FileContainer);
        }
        // A VERIFY reads the host directly, so it needs the read gate (R6: gate off, no direct
        // host reads), and a direct worker's bounce buffer, which exists only where direct
        // writes are effective: both gates. Elsewhere the legacy I/O thread reads it into its
        // read-ahead buffer (both allocated at mount: W6).
        let gate = match kind {
            JobKind::Read => self.effective.direct_read,
            JobKind::Write | JobKind::Flush => self.effective.direct_write,
            JobKind::Verify => self.effective.direct_read && self.effective.direct_write,
        };
        if !gate {
            return Err(LegacyReason::GateOff);
        }
        if length > MAX_DIRECT_REQUEST {
            return Err(LegacyReason::TooLarge);
        }
        if address & host.limits().alignment_mask as usize != 0 {
            return Err(LegacyReason::UnalignedBuffer);
        }
        Ok(())
    }

    /// [`start`](Self::start) for a job granted on the dispatching thread: a small direct
    /// read or write that this thread may issue itself goes to the host from here
    /// (docs/design.md §5, one hand-off per request); any other job, or when it may not, goes
    /// to its path's FIFO.
    fn start_here(self: &Arc<Self>, job: IoJob<P::Request>) -> Result<(), IoJob<P::Request>> {
        // A flush and a VERIFY always go to their path's threads (a VERIFY is never read on
        // the thread that sent it: R11, W13).
        if job.path != Path::Direct || matches!(job.kind, JobKind::Flush | JobKind::Verify) {
            return self.start(job);
        }
        if job.kind == JobKind::Write {
            // Counted before anyone may finish it (R7: the flush barrier's accounting).
            self.context.writes.write_started();
        }
        match self.direct.issue_here(job, self) {
            Ok(()) => Ok(()),
            Err(job) => self.direct.submit(job),
        }
    }

    /// Hands a granted job to its path; hands it back when it was cancelled before it got
    /// there (while it waited for its range, or at dispatch): the caller finishes it as
    /// cancelled, nothing issued, its range released.
    fn start(&self, job: IoJob<P::Request>) -> Result<(), IoJob<P::Request>> {
        if job.kind == JobKind::Write {
            self.context.writes.write_started();
        }
        match job.path {
            Path::Legacy => self.legacy.submit(job),
            Path::Direct => self.direct.submit(job),
        }
    }

    /// The fault switch `VerifyOnCallerThread`: a VERIFY's range read synchronously on the
    /// dispatching thread, into a buffer allocated for the call (the old way, never in the
    /// image).
    #[cfg(feature = "fault-switches")]
    fn verify_on_this_thread(&self, offset: u64, length: u32) -> Status {
        const PIECE: usize = 64 * 1024;
        let mut buf = alloc::vec![0u8; (length as usize).min(PIECE)];
        let mut pos = 0usize;
        while pos < length as usize {
            let n = (length as usize - pos).min(PIECE);
            let at = self.params.data_offset + offset + pos as u64;
            let status = crate::io::verify_read_status(self.host().read(at, &mut buf[..n]), n);
            if !status.is_success() {
                return status;
            }
            pos += n;
        }
        Status::Success
    }

    /// Blocks new users of the key, waits for in-flight crypto, zeroizes it (docs/review.md R3).
    /// Requests that reach a segment or fragment afterwards fail with STATUS_DEVICE_BUSY.
    pub fn erase_keys(&self) {
        self.context.key.erase();
    }

    /// Waits in the range ordering on a request that does not overlap (must stay 0, R12).
    pub fn disjoint_waits(&self) -> u64 {
        self.order.with(|admission| admission.lock.disjoint_waits())
    }

    /// The most host operations the direct path had in flight at once (at most
    /// [`crate::direct::HOST_OPS`]).
    pub fn direct_host_ops_max(&self) -> usize {
        self.direct.host_ops_max()
    }

    /// Completion work items queued by the thread that finished the request (a work item
    /// was free and no request waited for one), without the completion thread.
    pub fn completions_queued_by_finisher(&self) -> u64 {
        self.completer.queued_directly()
    }

    /// Requests completed through the completion stage so far (work items that ran).
    pub fn completions(&self) -> u64 {
        self.completer.completed()
    }

    /// True when no finished request waits for a work item and none is queued or running.
    pub fn completions_idle(&self) -> bool {
        self.completer.is_idle()
    }

    /// Jobs ever queued in the direct FIFO, and ever taken out of it: a job queued before a
    /// read was dispatched is still queued while `taken` is below the `queued` read then (the
    /// simulator's R12 check on reads issued by the dispatching thread).
    pub fn direct_fifo_counts(&self) -> (u64, u64) {
        self.direct.fifo_counts()
    }

    /// Direct jobs that completion work items issued with the host permits they carried
    /// (part of the `detached` counter).
    pub fn direct_carried(&self) -> u64 {
        self.direct.carried()
    }

    /// The direct path's host permits held now: 0 once the volume is idle (every permit given
    /// back, including those completion work items carried).
    pub fn direct_permits_held(&self) -> usize {
        self.direct.permits_held()
    }

    /// Requests admitted and not yet handed to completion.
    pub fn in_flight(&self) -> usize {
        self.admitted.active()
    }

    /// Dismounts (docs/review.md R13): refuses new requests with STATUS_DEVICE_NOT_READY, serves
    /// every admitted one, waits until each child request has completed and every completion
    /// work item has returned, stops the threads, and erases the keys. Idempotent.
    pub fn dismount(self: &Arc<Self>) {
        if self.dismounted.swap(true, Ordering::AcqRel) {
            return;
        }
        if faults::is_on(Fault::R13AbandonChildren) {
            // The bug: refuse new work, erase the keys and return while requests and their
            // child operations are still in flight.
            self.admitted.close();
            self.legacy.stop();
            self.direct.stop();
            self.context.key.erase();
            return;
        }
        self.verify_refuse_waiting();
        self.admitted.close_and_wait();
        self.legacy.stop();
        self.direct.stop();
        let threads = self.threads.with(core::mem::take);
        // The completion thread is the first; stop it after the paths' threads returned.
        let mut threads = threads.into_iter();
        let completion = threads.next();
        for thread in threads {
            thread.join();
        }
        self.completer.stop();
        if let Some(thread) = completion {
            thread.join();
        }
        self.completer.wait_idle();
        // Requests issued without a waiter were finished in the host's completion context:
        // wait until those routines returned, so none holds the volume any more.
        self.context.host.drain();
        self.context.key.erase();
    }

    /// VERIFYs waiting their turn in the VERIFYs' line now.
    pub fn verifies_waiting(&self) -> usize {
        self.verifies.with(|line| line.waiting.len())
    }

    /// True once dismount has begun.
    pub fn is_dismounted(&self) -> bool {
        self.dismounted.load(Ordering::Acquire)
    }
}

/// A completion work item that carries a direct host permit issues the next job with it.
impl<P: Platform> Carrier for Volume<P> {
    fn issue_carried(self: Arc<Self>) {
        self.direct.issue_carried(&self);
    }
}

/// The host's report on a small request issued without a waiter (its completion context).
impl<P: Platform> DetachedDone for Volume<P> {
    fn detached_ended(&self, tag: usize, result: Result<usize, Status>) {
        self.direct.detached_ended(tag, result, self);
    }
}

/// How the paths give a job back: the volume claims it for them (the cancel hand-shake) and
/// finishes it.
impl<P: Platform> Finisher<P> for Volume<P> {
    fn claim(&self, job: IoJob<P::Request>) -> Option<IoJob<P::Request>> {
        self.claim_taken(job)
    }

    fn finish(
        &self,
        request: P::Request,
        buf: Option<<P::Request as UpperRequest>::Buf>,
        ticket: Ticket,
        kind: JobKind,
        status: Status,
        information: usize,
    ) {
        self.finish_with(request, buf, ticket, kind, status, information, false);
    }

    fn finish_carrying(
        &self,
        request: P::Request,
        buf: Option<<P::Request as UpperRequest>::Buf>,
        ticket: Ticket,
        kind: JobKind,
        status: Status,
        information: usize,
    ) {
        self.finish_with(request, buf, ticket, kind, status, information, true);
    }
}

impl<P: Platform> Volume<P> {
    /// [`Finisher::finish`]; `carry`: the job's direct host permit goes with its completion
    /// work item ([`Finisher::finish_carrying`]), or back to the direct path here when none
    /// could take it now.
    #[allow(clippy::too_many_arguments)]
    fn finish_with(
        &self,
        request: P::Request,
        buf: Option<<P::Request as UpperRequest>::Buf>,
        ticket: Ticket,
        kind: JobKind,
        status: Status,
        information: usize,
        mut carry: bool,
    ) {
        // Jobs this release grants that were cancelled while they waited for their range: they
        // are finished here, one after the other (a loop, not a recursion), linked through
        // their own requests (nothing allocated).
        let mut cancelled: <P::Request as UpperRequest>::List = RequestList::new();
        let mut next = Some((request, buf, ticket, kind, status, information));
        while let Some((mut request, buf, ticket, kind, status, information)) = next.take() {
            if let Some(buf) = buf {
                request.put_buffer(buf);
            }
            if kind == JobKind::Write {
                self.context.writes.write_finished();
            }
            if !status.is_success() {
                Counters::add(&self.counters.failed, 1);
            }
            // Whoever the release unblocks is handed to its path right here: `start` only
            // pushes onto a path's queue (its own short lock, never taken before this one), so
            // nothing is collected or allocated per request.
            self.order.with(|admission| {
                admission.lock.release(ticket, &mut admission.granted);
                for i in 0..admission.granted.len() {
                    let ticket = admission.granted[i];
                    if let Some(job) = admission.waiting[ticket.index()].take() {
                        if let Err(job) = self.start(job) {
                            cancelled.push_back(job.park());
                        }
                    }
                }
                admission.granted.clear();
                while !admission.lock.is_full() {
                    let Some(request) = admission.backlog.pop_front() else {
                        break;
                    };
                    if let Some(job) = Self::register(admission, IoJob::unpark(request)) {
                        if let Err(job) = self.start(job) {
                            cancelled.push_back(job.park());
                        }
                    }
                }
            });
            // The next waiting VERIFY, handed over before this one's completion is queued.
            if kind == JobKind::Verify {
                if let Some(request) = self.verify_hand_over() {
                    cancelled.push_back(request);
                }
            }
            let finished = Finished {
                request,
                status,
                information,
            };
            if core::mem::take(&mut carry) {
                if !self.completer.push_carrying(finished) {
                    self.direct.give_carried_permit();
                }
            } else {
                self.completer.push(finished);
            }
            self.admitted.exit();
            if let Some(request) = cancelled.pop_front() {
                let job = IoJob::unpark(request);
                next = Some((
                    job.request,
                    job.buf,
                    job.ticket,
                    job.kind,
                    Status::Cancelled,
                    0,
                ));
            }
        }
    }
}
