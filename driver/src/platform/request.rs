//! Upper requests and host devices: the two kinds of I/O the engine sees.

use crate::Status;

/// What an upper request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// IRP_MJ_READ.
    Read,
    /// IRP_MJ_WRITE.
    Write,
    /// IRP_MJ_FLUSH_BUFFERS.
    Flush,
    /// Any other major function (its IRP_MJ code).
    Other(u8),
}

/// The caller's buffer of an upper request, as an owned handle that can be cut into disjoint
/// owned pieces and joined back. The legacy queue hands each fragment's piece to a different
/// thread (I/O thread, completion thread) while the next fragment is in flight, exactly as
/// VeraCrypt's queue works on one IRP buffer; owning the pieces keeps that safe.
pub trait IoBuf: Send + 'static {
    /// The bytes.
    fn bytes(&mut self) -> &mut [u8];
    /// Number of bytes.
    fn len(&self) -> usize;
    /// True for an empty buffer.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Splits off and returns the first `at` bytes; `self` keeps the rest.
    fn split_to(&mut self, at: usize) -> Self;
    /// Appends `next`, which must be the piece that directly follows `self`.
    fn unsplit(&mut self, next: Self);
    /// Address of the first byte (for alignment and page-offset arithmetic only).
    fn address(&self) -> usize;
}

/// What the engine keeps with a request while it waits in one of its queues (its range
/// ticket, path and kind, or its final status and byte count): 16 bytes the request stores
/// itself (in the kernel: the IRP's DriverContext), so a waiting request needs nothing else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestNote(pub [u32; 4]);

/// A FIFO of waiting requests linked through the requests themselves (in the kernel: the
/// IRP's `Tail.Overlay.ListEntry`, as VeraCrypt queues IRPs), so queueing allocates nothing
/// and the list is never full (W6). Not synchronised: the engine keeps it under its lock.
pub trait RequestList<R>: Send {
    /// An empty list (allocates nothing).
    fn new() -> Self;
    /// Appends `request`.
    fn push_back(&mut self, request: R);
    /// Takes the oldest request.
    fn pop_front(&mut self) -> Option<R>;
    /// Takes out the oldest request `pick` selects (a cancel routine's search).
    fn remove_first(&mut self, pick: &mut dyn FnMut(&R) -> bool) -> Option<R>;
    /// Number of requests linked.
    fn len(&self) -> usize;
    /// True when no request is linked.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A request from above (an IRP in the kernel). Owned: completing it consumes it, so nothing
/// can read it afterwards (docs/review.md R9).
pub trait UpperRequest: Send + Sized + 'static {
    /// The caller's buffer type.
    type Buf: IoBuf;
    /// The list waiting requests of this type are linked in (through themselves).
    type List: RequestList<Self>;

    /// The engine's note, as last set (default before).
    fn note(&self) -> RequestNote;
    /// Stores the engine's note in the request.
    fn set_note(&mut self, note: RequestNote);

    /// The major function.
    fn kind(&self) -> RequestKind;
    /// Byte offset in the volume (signed, as the IRP carries it).
    fn offset(&self) -> i64;
    /// Length in bytes.
    fn length(&self) -> u32;
    /// Takes the caller's buffer (the MDL's system address in the kernel), exactly `length`
    /// bytes, or `None` when the request carries no usable buffer (docs/review.md R14).
    fn take_buffer(&mut self) -> Option<Self::Buf>;
    /// Gives the (whole, re-joined) buffer back before completion.
    fn put_buffer(&mut self, buf: Self::Buf);
    /// True once the request was cancelled by its issuer.
    fn is_cancelled(&self) -> bool;
    /// Identifies the request while it is outstanding (the IRP's address in the kernel): the
    /// key the issuer's cancel hands to `Volume::cancel`.
    fn cancel_key(&self) -> usize;
    /// The engine has queued the request: from now on the issuer's cancel reaches
    /// `Volume::cancel(cancel_key)` (in the kernel: the IRP's cancel routine is set). False
    /// when the request was cancelled already and the hook was taken back at once; the engine
    /// then completes it with STATUS_CANCELLED, nothing issued.
    fn arm_cancel(&mut self) -> bool;
    /// A path takes the request off its queue to work on it: the issuer's cancel no longer
    /// reaches the engine. False when the hook has fired already (the cancel routine runs or
    /// ran): its call to `Volume::cancel` then settles the request with the engine.
    fn disarm_cancel(&mut self) -> bool;
    /// Completes the request with `status` and `information` (bytes transferred).
    fn complete(self, status: Status, information: usize);
}

/// Whether the volume lives on a raw device or in a container file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostKind {
    /// A raw partition or drive (eligible for the direct path).
    RawDevice,
    /// A container file (always the legacy path).
    FileContainer,
}

/// The limits of the host device that segmentation respects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostLimits {
    /// Logical sector size in bytes (512 or 4096).
    pub sector_size: u32,
    /// Maximum bytes in one transfer.
    pub max_transfer: u32,
    /// Maximum physical pages in one transfer.
    pub max_physical_pages: u32,
    /// Buffer alignment mask (0 = byte aligned, 511 = sector aligned, ...).
    pub alignment_mask: u32,
    /// Page size in bytes.
    pub page_size: u32,
}

impl HostLimits {
    /// Limits of a device that imposes none beyond 512-byte sectors.
    pub const fn unlimited() -> Self {
        HostLimits {
            sector_size: 512,
            max_transfer: u32::MAX,
            max_physical_pages: u32::MAX,
            alignment_mask: 0,
            page_size: 4096,
        }
    }
}

/// A started host operation. It borrows its buffer until it has finished; dropping it without
/// `wait` still waits, so a child request is never abandoned (docs/review.md R13).
pub trait HostIo {
    /// Blocks until the operation finished; the bytes transferred or the host's status.
    fn wait(self) -> Result<usize, Status>;
}

/// The device under a volume. All writes are write-through, as VeraCrypt opens its host.
pub trait HostDevice: Send + Sync + 'static {
    /// A started operation.
    type Io<'a>: HostIo
    where
        Self: 'a;

    /// Raw device or container file.
    fn kind(&self) -> HostKind;
    /// Size in bytes.
    fn size(&self) -> u64;
    /// Transfer limits.
    fn limits(&self) -> HostLimits;
    /// Starts an asynchronous read into `buf` (the direct path's child request).
    fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Io<'a>;
    /// Starts an asynchronous write of `buf`.
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> Self::Io<'a>;
    /// Flushes the device's volatile cache.
    fn flush(&self) -> Result<(), Status>;

    /// Synchronous read (the legacy I/O thread's host access).
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Status> {
        self.start_read(offset, buf).wait()
    }
    /// Synchronous write.
    fn write(&self, offset: u64, buf: &[u8]) -> Result<usize, Status> {
        self.start_write(offset, buf).wait()
    }
}

/// A shared host device is a host device (the user-mode tools keep one per file).
impl<H: HostDevice> HostDevice for alloc::sync::Arc<H> {
    type Io<'a>
        = H::Io<'a>
    where
        Self: 'a;

    fn kind(&self) -> HostKind {
        (**self).kind()
    }
    fn size(&self) -> u64 {
        (**self).size()
    }
    fn limits(&self) -> HostLimits {
        (**self).limits()
    }
    fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Io<'a> {
        (**self).start_read(offset, buf)
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> Self::Io<'a> {
        (**self).start_write(offset, buf)
    }
    fn flush(&self) -> Result<(), Status> {
        (**self).flush()
    }
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Status> {
        (**self).read(offset, buf)
    }
    fn write(&self, offset: u64, buf: &[u8]) -> Result<usize, Status> {
        (**self).write(offset, buf)
    }
}
