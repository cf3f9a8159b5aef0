//! What a path is handed by its volume: a narrow context (what it reads and counts) and a
//! [`Finisher`] (how it gives a job back). A path knows its volume only through these two.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU64, Ordering};

use super::{Counters, IoJob, JobKind, MemoryBook};
use crate::barrier::Ticket;
use crate::crypto::{CryptoPool, VolumeKey};
use crate::platform::{Platform, UpperRequest};
use crate::Status;

/// Where the volume's data lives on its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// Host byte offset of the data area (the absolute data-unit numbers start here).
    pub(crate) data_offset: u64,
    /// Size of the data area in bytes.
    pub(crate) data_size: u64,
    /// Sector size the volume presents.
    pub(crate) sector_size: u32,
}

/// Bumped when a write is granted and when it finishes (either path): the legacy read-ahead is
/// valid only if the generation did not move while it was taken and used.
#[derive(Default)]
pub(crate) struct WriteGeneration {
    generation: AtomicU64,
    in_flight: AtomicU64,
}

impl WriteGeneration {
    /// A granted write goes to its path.
    pub(crate) fn write_started(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// A write finished (whatever its status).
    pub(crate) fn write_finished(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }

    /// The current generation.
    pub(crate) fn current(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Writes granted and not yet finished.
    pub(crate) fn writes_in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Acquire)
    }
}

/// What both paths of one volume read and count, shared with the volume (built at mount).
pub(crate) struct PathContext<P: Platform> {
    /// The platform (threads, crypto scope, encryption threads).
    pub(crate) platform: P,
    /// The host device.
    pub(crate) host: P::Host,
    /// The volume key (blocked and erased by the volume, docs/review.md R3).
    pub(crate) key: VolumeKey<P>,
    /// Where the data area is.
    pub(crate) geometry: Geometry,
    /// The volume's path counters.
    pub(crate) counters: Arc<Counters>,
    /// The encryption pool's split policy (the legacy queue's crypto, and a direct request
    /// alone on its volume).
    pub(crate) crypto_pool: CryptoPool,
    /// Writes granted and finished, for the legacy read-ahead.
    pub(crate) writes: WriteGeneration,
    /// Bytes the paths' buffers hold, by purpose (counted as they are allocated, at mount).
    pub(crate) memory: MemoryBook,
}

/// How a path gives a job back to its volume (`volume` implements it). Held by a path's
/// threads, so it lives as long as they do.
pub(crate) trait Finisher<P: Platform>: Send + Sync + 'static {
    /// A path popped `job` and wants to work on it ([`super::JobQueue::next`]). `None` when the
    /// issuer's cancel won: the job is then completed (here or by the cancel routine) and the
    /// path moves on.
    fn claim(&self, job: IoJob<P::Request>) -> Option<IoJob<P::Request>>;

    /// The path is done with a job: gives the buffer back, releases the range (starting whoever
    /// it unblocks) and hands the request to the completion stage. The request holds no engine
    /// resource after this (docs/review.md R1).
    fn finish(
        &self,
        request: P::Request,
        buf: Option<<P::Request as UpperRequest>::Buf>,
        ticket: Ticket,
        kind: JobKind,
        status: Status,
        information: usize,
    );

    /// [`finish`](Self::finish) for a job whose host permit goes with its completion work
    /// item, which uses it to issue the path's next job (the direct path's
    /// `issue_carried`), or gives it back itself when no work item could take it now.
    fn finish_carrying(
        &self,
        request: P::Request,
        buf: Option<<P::Request as UpperRequest>::Buf>,
        ticket: Ticket,
        kind: JobKind,
        status: Status,
        information: usize,
    );
}
