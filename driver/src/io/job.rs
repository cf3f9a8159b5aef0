//! The job a granted (or waiting) upper request becomes, and which path serves it.

use crate::barrier::Ticket;
use crate::platform::{RequestNote, UpperRequest};
use crate::Status;

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
    /// The caller's buffer (none for a flush or a VERIFY).
    pub(crate) buf: Option<R::Buf>,
    pub(crate) kind: JobKind,
    /// Byte offset within the volume.
    pub(crate) offset: u64,
    pub(crate) length: u32,
    pub(crate) ticket: Ticket,
    pub(crate) path: Path,
}

/// Where a parked job's mark sits in its note's second word (kind: bits 0-7, path: 8-15).
const MARK_SHIFT: u32 = 16;

/// What a job does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobKind {
    Read,
    Write,
    Flush,
    /// IOCTL_DISK_VERIFY: a read of the range into an engine buffer, the bytes discarded.
    Verify,
}

impl JobKind {
    const fn code(self) -> u32 {
        match self {
            JobKind::Read => 0,
            JobKind::Write => 1,
            JobKind::Flush => 2,
            JobKind::Verify => 3,
        }
    }

    const fn from_code(code: u32) -> Self {
        match code {
            0 => JobKind::Read,
            1 => JobKind::Write,
            3 => JobKind::Verify,
            _ => JobKind::Flush,
        }
    }
}

/// The status of one host read of a VERIFY, on either path: success only when every byte was
/// read; a short read is STATUS_INVALID_PARAMETER, VeraCrypt's answer (a read or write that
/// moves fewer bytes is STATUS_END_OF_FILE, W12); a failure is the host's status.
pub(crate) fn verify_read_status(result: Result<usize, Status>, len: usize) -> Status {
    match result {
        Ok(n) if n == len => Status::Success,
        Ok(_) => Status::InvalidParameter,
        Err(status) => status,
    }
}

impl<R: UpperRequest> IoJob<R> {
    /// The job as a bare request that can wait in a [`crate::platform::RequestList`]: the
    /// buffer goes back into the request, the ticket, path, kind and validated range into its
    /// note. Allocates nothing.
    pub(crate) fn park(self) -> R {
        self.park_marked(false)
    }

    /// [`park`](Self::park), with a mark a queue's taker can read without unparking
    /// ([`is_marked`](Self::is_marked)): the direct path marks a job that may be issued
    /// without a waiter.
    pub(crate) fn park_marked(self, mark: bool) -> R {
        let IoJob {
            mut request,
            buf,
            kind,
            ticket,
            path,
            offset,
            length,
        } = self;
        if let Some(buf) = buf {
            request.put_buffer(buf);
        }
        let path = match path {
            Path::Legacy => 0,
            Path::Direct => 1,
        };
        request.set_note(RequestNote([
            ticket.raw(),
            kind.code() | (path << 8) | (u32::from(mark) << MARK_SHIFT),
            offset as u32,
            (offset >> 32) as u32,
            length,
        ]));
        request
    }

    /// The mark a parked request carries ([`park_marked`](Self::park_marked)).
    pub(crate) fn is_marked(request: &R) -> bool {
        let RequestNote([_, kind_path, ..]) = request.note();
        kind_path >> MARK_SHIFT & 1 != 0
    }

    /// The job a [`park`](Self::park)ed request was.
    pub(crate) fn unpark(mut request: R) -> Self {
        let RequestNote([ticket, kind_path, offset_low, offset_high, length]) = request.note();
        let (kind, path) = (JobKind::from_code(kind_path & 0xff), kind_path >> 8 & 0xff);
        // The range dispatch validated, never read from the request again (a VERIFY's comes
        // from its system buffer).
        let offset = u64::from(offset_low) | (u64::from(offset_high) << 32);
        let buf = match kind {
            JobKind::Flush | JobKind::Verify => None,
            // The buffer dispatch took (and checked) before, handed out again.
            _ => request.take_buffer(),
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
