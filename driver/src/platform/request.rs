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
    /// IOCTL_DISK_VERIFY: [`offset`](UpperRequest::offset) and
    /// [`length`](UpperRequest::length) are its VERIFY_INFORMATION's StartingOffset and Length,
    /// and it carries no buffer. The engine reads the range from the host on a path's thread,
    /// in turn with the volume's reads and writes, discards the bytes and reports the read's
    /// status (information 0).
    Verify,
    /// Any other major function (its IRP_MJ code).
    Other(u8),
}

/// The caller's buffer of an upper request, as an owned handle that can be cut into disjoint
/// owned pieces and joined back. The legacy queue hands each fragment's piece to a different
/// thread (I/O thread, completion thread) while the next fragment is in flight, exactly as
/// VeraCrypt's queue works on one IRP buffer; owning the pieces keeps that safe.
///
/// docs/review.md W7: the buffer is taken at dispatch without being mapped (the kernel checks
/// only that the request has an MDL); the path's thread that takes the request calls
/// [`map`](IoBuf::map) before it touches a byte, so no request is mapped while it only waits.
pub trait IoBuf: Send + 'static {
    /// Maps the buffer for the thread that works on it (MmGetSystemAddressForMdlSafe with
    /// HighPagePriority | MdlMappingNoExecute in the kernel) and returns its bytes; mapping
    /// again returns the same bytes. Called once per request, on the whole buffer, before it
    /// is split. A mapping failure (system-PTE pressure) is STATUS_INSUFFICIENT_RESOURCES,
    /// which Mm and Cc retry: the request fails with it and nothing of it is issued.
    fn map(&mut self) -> Result<&mut [u8], Status>;
    /// The platform's view of the bytes, once [`map`](IoBuf::map)ped (pieces split off a
    /// mapped buffer are mapped). Not mapped: an empty slice in the kernel (after a DbgPrint
    /// line), a panic in the std host. The engine never calls it: it reads and writes an
    /// upper buffer only through [`mapped`](IoBuf::mapped), which turns a forgotten `map` into
    /// a failed request instead of a panicking index or a read completed with stale bytes.
    fn bytes(&mut self) -> &mut [u8];
    /// The whole buffer's bytes, or STATUS_INSUFFICIENT_RESOURCES (nothing read or written)
    /// when the platform gives fewer than [`len`](IoBuf::len) bytes: a buffer the engine did
    /// not map first. The engine's only accessor of an upper buffer's bytes.
    fn mapped(&mut self) -> Result<&mut [u8], Status> {
        let len = self.len();
        let bytes = self.bytes();
        if bytes.len() == len {
            Ok(bytes)
        } else {
            Err(Status::InsufficientResources)
        }
    }
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
    /// Address of the first byte in the issuer's view of the buffer (in the kernel the MDL's
    /// virtual address, which has the page offset and, for every alignment below a page, the
    /// alignment of the mapped bytes): for alignment and page-offset arithmetic only, known
    /// before [`map`](IoBuf::map) (the path is chosen from it at dispatch, R12).
    fn address(&self) -> usize;
    /// Where the first byte lives for a host that can hand the caller's memory down as it is
    /// (the kernel: the upper IRP's MDL and this piece's offset in it, for IoBuildPartialMdl),
    /// or `None` where the platform has no such description (its host uses the bytes).
    fn origin(&self) -> Option<BufOrigin> {
        None
    }
}

/// Where a piece of an upper request's buffer lives, in the platform's own terms. Opaque to the
/// engine, which only moves it forward with the piece ([`BufOrigin::advanced`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufOrigin {
    /// The platform's descriptor of the whole buffer (the kernel: the upper IRP's MDL).
    pub descriptor: usize,
    /// Byte offset of the piece's first byte within the described buffer.
    pub offset: usize,
}

impl BufOrigin {
    /// The origin `by` bytes further on.
    pub fn advanced(self, by: usize) -> Self {
        BufOrigin {
            descriptor: self.descriptor,
            offset: self.offset.saturating_add(by),
        }
    }
}

/// What a host operation knows about the upper request it serves: its I/O priority, and where a
/// read's caller buffer lives. Not its paging flags (W11): a child request goes to the host
/// handle's device (RAW and any minifilters above a disk, not the disk itself), where
/// IRP_PAGING_IO would claim paging I/O for a section the DASD file object does not have;
/// the child carries IRP_NOCACHE instead, as every direct transfer is uncached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// The upper request's I/O priority hint in the platform's terms (the kernel:
    /// IO_PRIORITY_HINT), copied into its host requests; `None` leaves theirs at the default.
    pub priority: Option<u8>,
    /// For a read into the caller's buffer: where the segment's first byte lives.
    pub memory: Option<BufOrigin>,
}

/// What the engine keeps with a request while it waits in one of its queues (its range
/// ticket, path and kind and its validated offset and length, or its final status and byte
/// count): 20 bytes the request stores itself (in the kernel: the IRP's DriverContext), so a
/// waiting request needs nothing else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestNote(pub [u32; 5]);

/// A FIFO of waiting requests linked through the requests themselves (in the kernel: the
/// IRP's `Tail.Overlay.ListEntry`, as VeraCrypt queues IRPs), so queueing allocates nothing
/// and the list is never full (W6). Not synchronised: the engine keeps it under its lock.
///
/// A keyed list ([`new_keyed`](RequestList::new_keyed)) also takes a request out by its
/// [`cancel_key`](UpperRequest::cancel_key) without a search
/// ([`remove_key`](RequestList::remove_key)): each request linked in it carries an in-line
/// flag, set as it is appended and cleared as it leaves (popped or removed), both under the
/// list's lock; a request appended to any other list carries none. The engine keeps one keyed
/// list per volume (the VERIFYs' line), and a request belongs to one volume, so a request whose
/// flag is set is linked in that volume's keyed list and in no other.
pub trait RequestList<R>: Send {
    /// An empty list (allocates nothing).
    fn new() -> Self;
    /// An empty keyed list (allocates nothing).
    fn new_keyed() -> Self;
    /// Appends `request`.
    fn push_back(&mut self, request: R);
    /// Puts `request` before every other (one taken that could not be served after all goes
    /// back where it was, so nothing queued after it overtakes it).
    fn push_front(&mut self, request: R);
    /// Takes the oldest request.
    fn pop_front(&mut self) -> Option<R>;
    /// Takes the oldest request if `pick` selects it (`pick` sees that one only: constant
    /// time).
    fn pop_front_if(&mut self, pick: &mut dyn FnMut(&R) -> bool) -> Option<R>;
    /// Takes out the oldest request `pick` selects (a cancel routine's search).
    fn remove_first(&mut self, pick: &mut dyn FnMut(&R) -> bool) -> Option<R>;
    /// A keyed list: takes out the request `key` names when its in-line flag says it is linked
    /// here, else `None` (as on a list that is not keyed). In the kernel, constant time: the
    /// IRP the key names is unlinked through its own doubly linked list entry, no search,
    /// once its neighbours are checked to link it (a mismatch panics: [`super::LinkedRequests`],
    /// the link logic every host's list runs).
    /// `key` must name a request that is not completed while the call runs (the cancel
    /// routine's: the engine completes such a request only after its routine's search ended,
    /// `volume/cancel.rs`); in the kernel it is read through that address.
    fn remove_key(&mut self, key: usize) -> Option<R>;
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
    /// Takes the caller's buffer (unmapped: the IRP's MDL in the kernel), exactly `length`
    /// bytes, or `None` when the request carries no usable buffer (docs/review.md R14).
    fn take_buffer(&mut self) -> Option<Self::Buf>;
    /// Gives the (whole, re-joined) buffer back before completion.
    fn put_buffer(&mut self, buf: Self::Buf);
    /// True once the request was cancelled by its issuer.
    fn is_cancelled(&self) -> bool;
    /// The request's I/O priority hint (the kernel: IoGetIoPriorityHint), or `None` where the
    /// platform has none: the host requests made for it carry it.
    fn priority_hint(&self) -> Option<u8> {
        None
    }
    /// True for paging I/O (the kernel: IRP_PAGING_IO, the memory manager's reads and
    /// writes of mapped and modified pages): never issued by its dispatching thread, which may
    /// be the memory manager's own page writer (the workers, already running as the mounting
    /// user, serve it). The default: none is.
    fn is_paging_io(&self) -> bool {
        false
    }
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

impl HostKind {
    /// What a host path names (NT path, UTF-16, no terminator): a device object
    /// (`\Device\HarddiskVolume3`, `\Device\Harddisk0\Partition1`, `\Device\Harddisk0\DR0`)
    /// or a link to one in the DOS device namespace (`\??\`, `\GLOBAL??\`, `\DosDevices\`:
    /// `X:`, `PhysicalDriveN`, `Volume{GUID}`, `HarddiskNPartitionM`, and
    /// `\??\GLOBALROOT\Device\...` as the device path after it) is a raw device; a path below
    /// a device (`\Device\HarddiskVolume3\dir\vol.hc`) or through a drive letter
    /// (`\??\C:\vol.hc`, also `\??\C:\`, the root directory) is a container file. Names are
    /// matched without regard to ASCII case. The product glue prefers what the opened file
    /// object says (wdm/host/product.rs); this is the text's answer.
    pub fn of_path(path: &[u16]) -> HostKind {
        let raw = match path.split_first() {
            Some((first, rest)) if *first == BACKSLASH => names_device(rest),
            _ => false,
        };
        if raw {
            HostKind::RawDevice
        } else {
            HostKind::FileContainer
        }
    }
}

const BACKSLASH: u16 = b'\\' as u16;

/// The first component of `s` and what follows its backslash (`None`: no backslash).
fn component(s: &[u16]) -> (&[u16], Option<&[u16]>) {
    match s.iter().position(|c| *c == BACKSLASH) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    }
}

/// `path` (after the root backslash) names a device object, directly or through a link.
fn names_device(path: &[u16]) -> bool {
    let (top, rest) = component(path);
    let Some(rest) = rest else {
        return false;
    };
    if ascii_eq(top, "Device") {
        let (device, below) = component(rest);
        if device.is_empty() {
            return false;
        }
        return match below.map(component) {
            None => true,
            // \Device\HarddiskN\PartitionM and \Device\HarddiskN\DRM name devices too.
            Some((child, None)) => {
                numbered(device, "Harddisk")
                    && (numbered(child, "Partition") || numbered(child, "DR"))
            }
            Some(_) => false,
        };
    }
    if ascii_eq(top, "??") || ascii_eq(top, "GLOBAL??") || ascii_eq(top, "DosDevices") {
        let (link, below) = component(rest);
        if ascii_eq(link, "GLOBALROOT") {
            // \??\GLOBALROOT\Device\...: the object path after it, from the root.
            return below.is_some_and(names_device);
        }
        return below.is_none() && device_link(link);
    }
    false
}

/// A DOS device name that links to a device object rather than a file system path: a drive
/// letter (`C:`), `PhysicalDriveN`, `Volume{...}`, `HarddiskNPartitionM`.
fn device_link(name: &[u16]) -> bool {
    let letter = |c: u16| u8::try_from(c).is_ok_and(|c| c.is_ascii_alphabetic());
    let drive = matches!(name, [l, colon] if letter(*l) && *colon == u16::from(b':'));
    let volume = name.len() > "Volume{}".len()
        && ascii_eq(&name[.."Volume{".len()], "Volume{")
        && name.last() == Some(&u16::from(b'}'));
    let partition = name
        .iter()
        .position(|c| *c == u16::from(b'P') || *c == u16::from(b'p'))
        .is_some_and(|i| numbered(&name[..i], "Harddisk") && numbered(&name[i..], "Partition"));
    drive || volume || partition || numbered(name, "PhysicalDrive")
}

/// `s` equals the ASCII `word`, ignoring ASCII case.
fn ascii_eq(s: &[u16], word: &str) -> bool {
    s.len() == word.len()
        && s.iter()
            .zip(word.bytes())
            .all(|(a, b)| u8::try_from(*a).is_ok_and(|a| a.eq_ignore_ascii_case(&b)))
}

/// `s` is the ASCII `prefix` (any case) followed by one or more decimal digits.
fn numbered(s: &[u16], prefix: &str) -> bool {
    s.len() > prefix.len()
        && ascii_eq(&s[..prefix.len()], prefix)
        && s[prefix.len()..]
            .iter()
            .all(|c| (u16::from(b'0')..=u16::from(b'9')).contains(c))
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
///
/// Never leak one (`mem::forget`, a cycle of `Arc`s): the borrow of the buffer would end while
/// the host still writes into it or reads from it. This holds for every `start_*` and
/// `start_*_for` result; the engine only ever waits for or drops them.
pub trait HostIo {
    /// Blocks until the operation finished; the bytes transferred or the host's status.
    fn wait(self) -> Result<usize, Status>;
}

/// A started host read that keeps its buffer and hands it back when it finished, so the
/// direct path can decrypt each segment of a request as it arrives while later segments are
/// still in flight. Dropping it without `wait_read` still waits (R13).
pub trait HostRead<'a> {
    /// Blocks until the read finished; the bytes read or the host's status, and the buffer.
    fn wait_read(self) -> (Result<usize, Status>, &'a mut [u8]);
}

/// A [`HostRead`] made of an operation that does not borrow the buffer itself (its data
/// moved at start, or the host keeps a raw pointer to it until the operation finished) and the
/// buffer, which nobody touches until the operation finished.
pub struct KeptRead<'a, I: HostIo> {
    io: I,
    buf: &'a mut [u8],
}

impl<'a, I: HostIo> KeptRead<'a, I> {
    /// `io` reads into `buf`; `buf` is handed back once `io` finished.
    pub fn new(io: I, buf: &'a mut [u8]) -> Self {
        KeptRead { io, buf }
    }
    /// The same read with its operation wrapped by `wrap` (a host that wraps another host's
    /// operations). The buffer stays inside: only [`HostRead::wait_read`] hands it back, once
    /// the read finished, so no caller can touch it while the read may be in flight.
    pub fn map_io<J: HostIo>(self, wrap: impl FnOnce(I) -> J) -> KeptRead<'a, J> {
        KeptRead {
            io: wrap(self.io),
            buf: self.buf,
        }
    }
}

impl<'a, I: HostIo> HostRead<'a> for KeptRead<'a, I> {
    fn wait_read(self) -> (Result<usize, Status>, &'a mut [u8]) {
        (self.io.wait(), self.buf)
    }
}

/// Who hears that a detached read or write ended ([`HostDevice::start_read_detached`],
/// [`HostDevice::start_write_detached`]): the volume.
pub trait DetachedDone: Send + Sync + 'static {
    /// The detached request `tag` ended with `result` (bytes moved, or the host's status).
    /// Called exactly once per request that started, in the host's completion context: an
    /// IoCompletion routine at DISPATCH_LEVEL in the kernel, any thread, possibly the starting
    /// one before the start returned. Never blocks (docs/review.md W9).
    fn detached_ended(&self, tag: usize, result: Result<usize, Status>);
}

/// Whom a detached request reports to, and with which tag. Cloning it only counts a
/// reference.
#[derive(Clone)]
pub struct Detached {
    /// Told once, when the request ended.
    pub done: alloc::sync::Arc<dyn DetachedDone>,
    /// The starter's name for the request (the engine's slot).
    pub tag: usize,
}

impl Detached {
    /// Tells `done` that the request ended.
    pub fn report(self, result: Result<usize, Status>) {
        self.done.detached_ended(self.tag, result);
    }
}

/// The device under a volume. All writes are write-through, as VeraCrypt opens its host.
pub trait HostDevice: Send + Sync + 'static {
    /// A started operation.
    type Io<'a>: HostIo
    where
        Self: 'a;
    /// A started read that hands its buffer back.
    type Read<'a>: HostRead<'a>
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
    /// Starts an asynchronous read into `buf` that hands `buf` back when it finished (the
    /// direct path's segments, several of one request in flight together).
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a>;
    /// Starts an asynchronous write of `buf`.
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> Self::Io<'a>;
    /// [`start_read`](Self::start_read) for an upper request described by `origin` (the
    /// direct path's reads into the caller's buffer): a host may hand `origin.memory` down
    /// instead of describing `buf` anew, and copies the request's flags. The default ignores it.
    fn start_read_for<'a>(
        &'a self,
        offset: u64,
        buf: &'a mut [u8],
        origin: Origin,
    ) -> Self::Io<'a> {
        let _ = origin;
        self.start_read(offset, buf)
    }
    /// [`start_read_kept`](Self::start_read_kept) for an upper request described by `origin`
    /// (the direct path's read segments, several of one request in flight together), as
    /// [`start_read_for`](Self::start_read_for) describes it. The default ignores it.
    fn start_read_kept_for<'a>(
        &'a self,
        offset: u64,
        buf: &'a mut [u8],
        origin: Origin,
    ) -> Self::Read<'a> {
        let _ = origin;
        self.start_read_kept(offset, buf)
    }
    /// [`start_write`](Self::start_write) for an upper request described by `origin` (the
    /// direct path's writes from a worker's buffer: `origin.memory` is `None`).
    fn start_write_for<'a>(&'a self, offset: u64, buf: &'a [u8], origin: Origin) -> Self::Io<'a> {
        let _ = origin;
        self.start_write(offset, buf)
    }
    /// Starts a read of `buf.len()` bytes at `offset` into `buf` whose end is reported to
    /// `then` instead of being waited for: the direct path's small reads, issued by the
    /// dispatching thread or a worker that does not wait (docs/design.md §5). `Ok`: it started, and `then` will be told exactly once.
    /// `Err`: nothing started and `then` is never told (no child-operation slot free without
    /// waiting, or a host that has no detached reads: the default); the caller serves the
    /// read another way.
    ///
    /// The memory of `buf` may be written after this returns, until `then` is told (the
    /// kernel's child request fills the caller's pages through a partial MDL of
    /// `origin.memory`): the engine keeps the upper request and its buffer, untouched, until
    /// then. Never blocks.
    fn start_read_detached(
        &self,
        offset: u64,
        buf: &mut [u8],
        origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        let _ = (offset, buf, origin, then);
        Err(Status::InvalidDeviceRequest)
    }
    /// [`start_read_detached`](Self::start_read_detached) for a write of `buf` (an engine
    /// buffer: a detached slot's bounce buffer, which the engine keeps untouched until `then`
    /// is told), write-through as every write.
    fn start_write_detached(
        &self,
        offset: u64,
        buf: &[u8],
        origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        let _ = (offset, buf, origin, then);
        Err(Status::InvalidDeviceRequest)
    }
    /// Waits until every detached request's report has returned, the reporter dropped and
    /// nothing of this host still runs for it in a completion context (the volume's dismount,
    /// at PASSIVE_LEVEL, after every request finished): so the last reference to the volume
    /// is never dropped in a completion routine. The default: nothing runs after a report.
    fn drain(&self) {}
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
    type Read<'a>
        = H::Read<'a>
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
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
        (**self).start_read_kept(offset, buf)
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> Self::Io<'a> {
        (**self).start_write(offset, buf)
    }
    fn start_read_for<'a>(
        &'a self,
        offset: u64,
        buf: &'a mut [u8],
        origin: Origin,
    ) -> Self::Io<'a> {
        (**self).start_read_for(offset, buf, origin)
    }
    fn start_read_kept_for<'a>(
        &'a self,
        offset: u64,
        buf: &'a mut [u8],
        origin: Origin,
    ) -> Self::Read<'a> {
        (**self).start_read_kept_for(offset, buf, origin)
    }
    fn start_write_for<'a>(&'a self, offset: u64, buf: &'a [u8], origin: Origin) -> Self::Io<'a> {
        (**self).start_write_for(offset, buf, origin)
    }
    fn start_read_detached(
        &self,
        offset: u64,
        buf: &mut [u8],
        origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        (**self).start_read_detached(offset, buf, origin, then)
    }
    fn start_write_detached(
        &self,
        offset: u64,
        buf: &[u8],
        origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        (**self).start_write_detached(offset, buf, origin, then)
    }
    fn drain(&self) {
        (**self).drain()
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

#[cfg(test)]
mod mapped_tests {
    use super::IoBuf;
    use crate::Status;

    /// A buffer as the kernel's looks before `map`: `bytes` gives nothing.
    struct Unmapped {
        data: [u8; 8],
        mapped: bool,
    }

    impl IoBuf for Unmapped {
        fn map(&mut self) -> Result<&mut [u8], Status> {
            self.mapped = true;
            Ok(&mut self.data)
        }
        fn bytes(&mut self) -> &mut [u8] {
            if self.mapped {
                &mut self.data
            } else {
                &mut []
            }
        }
        fn len(&self) -> usize {
            self.data.len()
        }
        fn split_to(&mut self, _at: usize) -> Self {
            unreachable!("not split here")
        }
        fn unsplit(&mut self, _next: Self) {}
        fn address(&self) -> usize {
            0
        }
    }

    #[test]
    fn w7_an_unmapped_buffer_fails_with_insufficient_resources_never_an_empty_success() {
        let mut buf = Unmapped {
            data: [7; 8],
            mapped: false,
        };
        assert_eq!(buf.mapped().err(), Some(Status::InsufficientResources));
        buf.map().expect("maps");
        assert_eq!(buf.mapped().map(|b| b.len()), Ok(8));
    }
}
