//! A mounted volume: geometry, validation, path choice, ordering, and the mount/dismount
//! lifecycle.
//!
//! Owns: the checks VeraCrypt makes before a request reaches its queue (statuses of
//! DESIGN.md §4), hidden-volume protection, the choice between the legacy queue and the
//! direct path (recorded with its reason), the volume's range lock, and dismount (REVIEW.md
//! R13: close admission, serve what was admitted, wait for every child request, erase keys).
//! Never: does host I/O or crypto itself; it hands granted requests to `queue` or `direct`,
//! and finished ones to `completion`.

pub(crate) mod buffer;
mod cancel;
mod counters;
pub mod geometry;
pub(crate) mod job_queue;
pub mod segment;

pub use counters::{CounterSnapshot, Counters, LegacyReason};

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Range;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::barrier::{Access, RangeLock, Ticket};
use crate::completion::{Completer, Finished};
use crate::crypto::{CryptoPool, VolumeKey, DATA_UNIT};
use crate::direct::DirectPath;
use crate::faults::{self, Fault};
use crate::platform::{
    HostDevice, HostKind, IoBuf, Lock, Platform, RequestKind, Rundown, Thread, ThreadRole,
    UpperRequest,
};
use crate::queue::LegacyQueue;
use crate::registry::{direct_read_configured, direct_write_configured, Gates, Tunables};
use crate::Status;
use segment::MAX_DIRECT_REQUEST;

/// Range-lock entries per volume: the legacy queue's requests, the direct slots and their
/// waiters. Beyond this, requests wait in an arrival-ordered backlog. The per-volume queues
/// (path FIFOs, completion queue, backlog) are allocated at mount for this many requests, so
/// up to twice this many outstanding requests never allocate; beyond that a queue grows.
pub(crate) const RANGE_ENTRIES: usize = 256;

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
    /// The gates, copied from the driver's global snapshot at mount (REVIEW.md R6).
    pub gates: Gates,
    /// The legacy queue's tunables.
    pub tunables: Tunables,
}

/// Which path serves a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// VeraCrypt's encrypted I/O queue.
    Legacy,
    /// The bounded direct path.
    Direct,
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

/// A granted or waiting request, with everything needed after it finishes captured up front.
pub(crate) struct IoJob<R: UpperRequest> {
    pub(crate) request: R,
    /// The caller's buffer (none for a flush).
    pub(crate) buf: Option<R::Buf>,
    pub(crate) kind: JobKind,
    /// Byte offset within the volume.
    pub(crate) offset: u64,
    pub(crate) length: u32,
    pub(crate) ticket: Ticket,
    pub(crate) path: Path,
}

/// What a job does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobKind {
    Read,
    Write,
    Flush,
}

struct Admission<R: UpperRequest> {
    lock: RangeLock,
    /// Jobs registered but not granted yet, by ticket index.
    waiting: Vec<Option<IoJob<R>>>,
    /// Jobs that found the range pool full, in arrival order.
    backlog: VecDeque<(IoJob<R>, Access)>,
    /// Tickets a release just granted (capacity fixed at mount: no allocation per request).
    granted: Vec<Ticket>,
}

/// A mounted volume.
pub struct Volume<P: Platform> {
    pub(crate) env: P,
    pub(crate) host: P::Host,
    pub(crate) key: VolumeKey<P>,
    pub(crate) params: MountParams,
    effective: Effective,
    order: P::Lock<Admission<P::Request>>,
    /// Cancelled requests between their cancel routine and the path that took them.
    cancels: P::Lock<cancel::CancelBook<P::Request>>,
    pub(crate) legacy: LegacyQueue<P>,
    pub(crate) direct: DirectPath<P>,
    pub(crate) completer: Arc<Completer<P>>,
    pub(crate) crypto_pool: CryptoPool,
    /// Admitted requests not yet handed to the completion stage.
    admitted: Rundown<P>,
    threads: P::Lock<Vec<P::Thread>>,
    protection_tripped: AtomicBool,
    /// Bumped when a write is granted and when it finishes: the legacy read-ahead is valid only
    /// if this did not move while it was taken and used.
    pub(crate) write_generation: AtomicU64,
    pub(crate) writes_in_flight: AtomicU64,
    /// Path counters.
    pub counters: Counters,
    dismounted: AtomicBool,
}

impl<P: Platform> Volume<P> {
    /// Mounts a volume on `host` with the 64-byte XTS master key: starts the legacy queue's
    /// three threads, the completion thread and, when a gate makes it usable, 8 direct workers.
    pub fn mount(
        env: P,
        host: P::Host,
        master_key: &[u8; 64],
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
        let crypto_pool = CryptoPool::new(env.cpu_count(), tunables.free_cpu_count as usize);
        let volume = Arc::new(Volume {
            key: VolumeKey::new(master_key),
            order: P::Lock::new(Admission {
                lock: RangeLock::with_capacity(RANGE_ENTRIES),
                waiting: (0..RANGE_ENTRIES).map(|_| None).collect(),
                backlog: VecDeque::with_capacity(RANGE_ENTRIES),
                granted: Vec::with_capacity(RANGE_ENTRIES),
            }),
            cancels: P::Lock::new(cancel::CancelBook::new()),
            legacy: LegacyQueue::new(&tunables, &host.limits()),
            direct: DirectPath::new(),
            completer: Arc::new(Completer::new(env.clone(), tunables.max_work_items)),
            crypto_pool,
            admitted: Rundown::new(),
            threads: P::Lock::new(Vec::new()),
            protection_tripped: AtomicBool::new(false),
            write_generation: AtomicU64::new(0),
            writes_in_flight: AtomicU64::new(0),
            counters: Counters::default(),
            dismounted: AtomicBool::new(false),
            effective,
            params,
            host,
            env,
        });
        if let Err(status) = volume.start_threads() {
            volume.dismount();
            return Err(status);
        }
        Ok(volume)
    }

    fn start_threads(self: &Arc<Self>) -> Result<(), Status> {
        let completer = Arc::clone(&self.completer);
        let t = self.env.spawn(
            ThreadRole::Completion,
            alloc::boxed::Box::new(move || completer.run()),
        )?;
        self.threads.with(|v| v.push(t));
        for t in LegacyQueue::start(self)? {
            self.threads.with(|v| v.push(t));
        }
        if self.effective.direct_read || self.effective.direct_write {
            for t in DirectPath::start(self)? {
                self.threads.with(|v| v.push(t));
            }
        }
        Ok(())
    }

    /// The effective gates and path configuration (REVIEW.md R6, R7).
    pub fn effective(&self) -> Effective {
        self.effective
    }

    /// Volume size in bytes.
    pub fn size(&self) -> u64 {
        self.params.data_size
    }

    /// The host device.
    pub fn host(&self) -> &P::Host {
        &self.host
    }

    /// The volume key (for status and tests).
    pub fn key(&self) -> &VolumeKey<P> {
        &self.key
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
            RequestKind::Other(_) => {
                Counters::add(&self.counters.rejected, 1);
                request.complete(Status::InvalidParameter, 0);
                return;
            }
        };
        let (offset, length) = match self.validate(&request, kind) {
            Ok(Some(v)) => v,
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
        let buf = if kind == JobKind::Flush {
            None
        } else {
            match request.take_buffer() {
                Some(b) if b.len() == length as usize => Some(b),
                Some(b) => {
                    request.put_buffer(b);
                    None
                }
                None => None,
            }
        };
        let buf = match (kind, buf) {
            (JobKind::Flush, _) => None,
            (_, Some(b)) => Some(b),
            (_, None) => {
                // REVIEW.md R14: no usable buffer, a clean failure on both paths.
                Counters::add(&self.counters.rejected, 1);
                request.complete(Status::InvalidUserBuffer, 0);
                return;
            }
        };
        if !self.admitted.enter() {
            Counters::add(&self.counters.rejected, 1);
            if let Some(b) = buf {
                request.put_buffer(b);
            }
            request.complete(Status::DeviceNotReady, 0);
            return;
        }
        // Queued from here on: the issuer's cancel now reaches `cancel` (the IRP's cancel
        // routine is set). Already cancelled: complete at once, nothing issued.
        if !request.arm_cancel() {
            Counters::add(&self.counters.failed, 1);
            if let Some(b) = buf {
                request.put_buffer(b);
            }
            request.complete(Status::Cancelled, 0);
            self.admitted.exit();
            return;
        }
        let path = match (kind, &buf) {
            (JobKind::Flush, _) => Path::Direct,
            (_, Some(b)) => match self.choose_path(kind, length, b.address()) {
                Ok(()) => Path::Direct,
                Err(reason) => {
                    self.counters.legacy_reason(reason);
                    Path::Legacy
                }
            },
            (_, None) => Path::Legacy,
        };
        let access = match kind {
            JobKind::Read => Access::Read,
            JobKind::Write => Access::Write,
            JobKind::Flush => Access::Flush,
        };
        let job = IoJob {
            request,
            buf,
            kind,
            offset,
            length,
            ticket: Ticket::placeholder(),
            path,
        };
        let granted = self.order.with(|o| {
            if !o.backlog.is_empty() || o.lock.is_full() {
                o.backlog.push_back((job, access));
                return None;
            }
            Some(Self::register(o, job, access))
        });
        if let Some(Some(job)) = granted {
            self.start(job);
        } else if let Some(None) = granted {
            Counters::add(&self.counters.range_waits, 1);
        }
    }

    /// Registers `job`; returns it when granted at once, otherwise parks it.
    fn register(
        o: &mut Admission<P::Request>,
        mut job: IoJob<P::Request>,
        access: Access,
    ) -> Option<IoJob<P::Request>> {
        let range = match access {
            Access::Flush => 0..u64::MAX,
            _ => job.offset..job.offset + u64::from(job.length),
        };
        let (ticket, granted) = o
            .lock
            .register(range, access)
            .expect("registration happens only when an entry is free");
        job.ticket = ticket;
        if granted {
            Some(job)
        } else {
            o.waiting[ticket.index()] = Some(job);
            None
        }
    }

    /// The checks VeraCrypt makes, in its order. `Ok(None)`: a zero-length transfer.
    fn validate(&self, request: &P::Request, kind: JobKind) -> Result<Option<(u64, u32)>, Status> {
        if kind == JobKind::Flush {
            return Ok(Some((0, 0)));
        }
        if kind == JobKind::Write && self.params.read_only {
            return Err(Status::MediaWriteProtected);
        }
        let offset = request.offset();
        let length = request.length();
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
        if self.host.kind() == HostKind::FileContainer {
            return Err(LegacyReason::FileContainer);
        }
        let gate = match kind {
            JobKind::Read => self.effective.direct_read,
            _ => self.effective.direct_write,
        };
        if !gate {
            return Err(LegacyReason::GateOff);
        }
        if length > MAX_DIRECT_REQUEST {
            return Err(LegacyReason::TooLarge);
        }
        if address & self.host.limits().alignment_mask as usize != 0 {
            return Err(LegacyReason::UnalignedBuffer);
        }
        Ok(())
    }

    /// Hands a granted job to its path.
    fn start(self: &Arc<Self>, job: IoJob<P::Request>) {
        if job.kind == JobKind::Write {
            self.writes_in_flight.fetch_add(1, Ordering::AcqRel);
            self.write_generation.fetch_add(1, Ordering::AcqRel);
        }
        match job.path {
            Path::Legacy => self.legacy.submit(job),
            Path::Direct => self.direct.submit(self, job),
        }
    }

    /// Called by a path when it is done with a job: gives the buffer back, releases the range
    /// (starting whoever it unblocks) and hands the request to the completion stage. The
    /// request holds no engine resource after this (REVIEW.md R1).
    pub(crate) fn finish(
        self: &Arc<Self>,
        mut request: P::Request,
        buf: Option<<P::Request as UpperRequest>::Buf>,
        ticket: Ticket,
        kind: JobKind,
        status: Status,
        information: usize,
    ) {
        if let Some(buf) = buf {
            request.put_buffer(buf);
        }
        if kind == JobKind::Write {
            self.write_generation.fetch_add(1, Ordering::AcqRel);
            self.writes_in_flight.fetch_sub(1, Ordering::AcqRel);
        }
        if !status.is_success() {
            Counters::add(&self.counters.failed, 1);
        }
        // Whoever the release unblocks is handed to its path right here: `start` only pushes
        // onto a path's queue (its own short lock, never taken before this one), so nothing
        // is collected or allocated per request.
        self.order.with(|o| {
            o.lock.release(ticket, &mut o.granted);
            for i in 0..o.granted.len() {
                let t = o.granted[i];
                if let Some(job) = o.waiting[t.index()].take() {
                    self.start(job);
                }
            }
            o.granted.clear();
            while !o.lock.is_full() {
                let Some((job, access)) = o.backlog.pop_front() else {
                    break;
                };
                if let Some(job) = Self::register(o, job, access) {
                    self.start(job);
                }
            }
        });
        self.completer.push(Finished {
            request,
            status,
            information,
        });
        self.admitted.exit();
    }

    /// Blocks new users of the key, waits for in-flight crypto, zeroizes it (REVIEW.md R3).
    /// Requests that reach a segment or fragment afterwards fail with STATUS_DEVICE_BUSY.
    pub fn erase_keys(&self) {
        self.key.erase();
    }

    /// Waits in the range ordering on a request that does not overlap (must stay 0, R12).
    pub fn disjoint_waits(&self) -> u64 {
        self.order.with(|o| o.lock.disjoint_waits())
    }

    /// Requests admitted and not yet handed to completion.
    pub fn in_flight(&self) -> usize {
        self.admitted.active()
    }

    /// Dismounts (REVIEW.md R13): refuses new requests with STATUS_DEVICE_NOT_READY, serves
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
            self.key.erase();
            return;
        }
        self.admitted.close_and_wait();
        self.legacy.stop();
        self.direct.stop();
        let threads = self.threads.with(core::mem::take);
        // The completion thread is the first; stop it after the paths' threads returned.
        let mut threads = threads.into_iter();
        let completion = threads.next();
        for t in threads {
            t.join();
        }
        self.completer.stop();
        if let Some(t) = completion {
            t.join();
        }
        self.completer.wait_idle();
        self.key.erase();
    }

    /// True once dismount has begun.
    pub fn is_dismounted(&self) -> bool {
        self.dismounted.load(Ordering::Acquire)
    }
}
