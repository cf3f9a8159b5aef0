//! What both I/O paths share, below both of them: the job a granted request becomes, the FIFO a
//! path's threads take jobs from, the aligned transfer buffer, segmentation, the path counters
//! and the per-volume capacities, plus the narrow context a path works with and the trait
//! through which it gives a job back.
//!
//! Owns: `IoJob` and `JobKind`, `JobQueue` (including the hole a cancel routine leaves),
//! `AlignedBuffer` and the [`VolumeMemory`] it is counted in, [`SegmentLimits`], [`Counters`] and their [`CounterSnapshot`],
//! `RANGE_ENTRIES`, and `PathContext` (host, key, platform, geometry, counters, encryption
//! pool, write generation).
//! Never: imports `volume`, `queue`, `direct` or `completion`; decides a request's path or its
//! ordering; completes a request.
//! Hands to: nothing by itself. `volume` builds a `PathContext` and hands it, with granted
//! jobs, to `queue` and `direct`; they give each job back through `Finisher`, which the
//! volume implements.

mod buffer;
mod context;
mod counters;
mod job;
mod job_queue;
mod memory;
mod segment;

pub(crate) use buffer::AlignedBuffer;
pub(crate) use context::{Finisher, Geometry, PathContext, WriteGeneration};
pub use counters::{CounterSnapshot, Counters, LegacyReason};
pub use job::Path;
pub(crate) use job::{verify_read_status, IoJob, JobKind};
pub(crate) use job_queue::{JobQueue, Next};
pub(crate) use memory::{try_vec, MemoryBook, Purpose};
pub use memory::{ArcShape, VolumeMemory};
pub use segment::{SegmentLimits, MAX_DIRECT_REQUEST};

/// Range-lock entries per volume: the legacy queue's requests, the direct slots and their
/// waiters. Beyond this, requests wait in an arrival-ordered backlog. The per-volume queues
/// (path FIFOs, completion queue, backlog) are allocated at mount for this many requests, so
/// up to twice this many outstanding requests never allocate; beyond that a queue grows.
pub(crate) const RANGE_ENTRIES: usize = 256;
