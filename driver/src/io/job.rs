//! The job a granted (or waiting) upper request becomes, and which path serves it.

use crate::barrier::Ticket;
use crate::platform::{RequestNote, UpperRequest};

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

impl JobKind {
    const fn code(self) -> u32 {
        match self {
            JobKind::Read => 0,
            JobKind::Write => 1,
            JobKind::Flush => 2,
        }
    }

    const fn from_code(code: u32) -> Self {
        match code {
            0 => JobKind::Read,
            1 => JobKind::Write,
            _ => JobKind::Flush,
        }
    }
}

impl<R: UpperRequest> IoJob<R> {
    /// The job as a bare request that can wait in a [`crate::platform::RequestList`]: the
    /// buffer goes back into the request, the ticket, path and kind into its note (the
    /// offset and length are the request's own). Allocates nothing.
    pub(crate) fn park(self) -> R {
        let IoJob {
            mut request,
            buf,
            kind,
            ticket,
            path,
            ..
        } = self;
        if let Some(buf) = buf {
            request.put_buffer(buf);
        }
        let path = match path {
            Path::Legacy => 0,
            Path::Direct => 1,
        };
        request.set_note(RequestNote([ticket.raw(), kind.code(), path, 0]));
        request
    }

    /// The job a [`park`](Self::park)ed request was.
    pub(crate) fn unpark(mut request: R) -> Self {
        let RequestNote([ticket, kind, path, _]) = request.note();
        let kind = JobKind::from_code(kind);
        let buf = match kind {
            JobKind::Flush => None,
            // The buffer dispatch took (and checked) before, handed out again.
            _ => request.take_buffer(),
        };
        let (offset, length) = match kind {
            JobKind::Flush => (0, 0),
            _ => (
                u64::try_from(request.offset()).unwrap_or(0),
                request.length(),
            ),
        };
        IoJob {
            request,
            buf,
            kind,
            offset,
            length,
            ticket: Ticket::from_raw(ticket),
            path: if path == 1 {
                Path::Direct
            } else {
                Path::Legacy
            },
        }
    }
}
