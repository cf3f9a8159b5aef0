//! The job a granted (or waiting) upper request becomes, and which path serves it.

use crate::barrier::Ticket;
use crate::platform::UpperRequest;

/// Which path serves a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// VeraCrypt's encrypted I/O queue.
    Legacy,
    /// The bounded direct path.
    Direct,
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
