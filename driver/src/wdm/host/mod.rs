//! The host device under a volume: [`KernelHost`], the engine's `HostDevice`.
//!
//! Owns: opening the host (product: one ZwCreateFile handle, as VeraCrypt opens it; wine-host:
//! the test disk driver's device object found by name), its size and transfer limits, child
//! requests (an IRP per segment, completed into a KEVENT), synchronous reads and writes, and
//! flush. Never: decides what to read or write (the engine's paths do).
//!
//! REVIEW.md R10: the device object that child requests go to comes from the mount's single
//! handle (ObReferenceObjectByHandle -> FILE_OBJECT -> IoGetRelatedDeviceObject); no second
//! handle exists, so an exclusive mount keeps share mode 0. R13: every child request holds the
//! host's remove lock until its completion routine ran and the IRP was freed; dropping the host
//! waits for all of them.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::marker::PhantomData;
use core::ptr::NonNull;

#[cfg(not(feature = "wine-host"))]
use wdk_sys::ntddk::MmUnlockPages;
use wdk_sys::ntddk::{
    IoBuildAsynchronousFsdRequest, IoFreeIrp, IoFreeMdl, IofCallDriver, ObfDereferenceObject,
};
use wdk_sys::{
    DEVICE_OBJECT, FILE_OBJECT, IO_STATUS_BLOCK, IRP, IRP_MJ_FLUSH_BUFFERS, IRP_MJ_READ,
    IRP_MJ_WRITE, LARGE_INTEGER, NTSTATUS, PVOID,
};

use super::remove_lock::{RemoveLock, RemoveLockGuard};
use super::sync::KernelEvent;
use crate::platform::{Event, HostDevice, HostIo, HostKind, HostLimits};
#[cfg(feature = "wine-host")]
use crate::volume::segment::SegmentLimits;
use crate::Status;

/// STATUS_MORE_PROCESSING_REQUIRED: the completion routine keeps the IRP for its owner.
const STATUS_MORE_PROCESSING_REQUIRED: NTSTATUS = 0xC000_0016_u32 as NTSTATUS;
/// SL_INVOKE_ON_CANCEL | SL_INVOKE_ON_SUCCESS | SL_INVOKE_ON_ERROR.
const SL_INVOKE_ALWAYS: u8 = 0x20 | 0x40 | 0x80;
/// SL_WRITE_THROUGH (IO_STACK_LOCATION.Flags of a write).
const SL_WRITE_THROUGH: u8 = 0x04;

/// Device control codes the host open sends.
pub(crate) mod ioctl {
    /// IOCTL_DISK_GET_LENGTH_INFO.
    pub const DISK_GET_LENGTH_INFO: u32 = 0x0007_405C;
    /// IOCTL_DISK_GET_DRIVE_GEOMETRY.
    pub const DISK_GET_DRIVE_GEOMETRY: u32 = 0x0007_0000;
    /// IOCTL_STORAGE_QUERY_PROPERTY.
    pub const STORAGE_QUERY_PROPERTY: u32 = 0x002D_1400;
    /// FSCTL_ALLOW_EXTENDED_DASD_IO.
    #[cfg(not(feature = "wine-host"))]
    pub const FSCTL_ALLOW_EXTENDED_DASD_IO: u32 = 0x0009_0083;
}

/// StorageAdapterProperty.
const STORAGE_ADAPTER_PROPERTY: u32 = 1;

/// Limits used when the host does not answer IOCTL_STORAGE_QUERY_PROPERTY: 64 KiB transfers
/// (17 pages), sector alignment. Every disk stack of the last twenty years accepts these.
const DEFAULT_MAX_TRANSFER: u32 = 64 * 1024;
const DEFAULT_MAX_PAGES: u32 = 17;

/// What a mount asks of the host open.
pub struct OpenParams<'a> {
    /// Host path (`\Device\HarddiskVolume3`, `\??\C:\vol.hc`), UTF-16 without terminator.
    pub path: &'a [u16],
    /// Open for reading only.
    pub read_only: bool,
    /// Share read/write with other openers (default: exclusive, share mode 0).
    pub shared: bool,
    /// wine-host build: the test disk driver whose first device plays the host.
    pub wine_driver_name: &'a [u16],
}

/// The device a volume lives on. Dropping it waits for every child request (R13), then
/// releases the device reference and closes the handle.
pub struct KernelHost {
    kind: HostKind,
    size: u64,
    limits: HostLimits,
    /// The device child requests are sent to (referenced through `file` or `driver`).
    device: NonNull<DEVICE_OBJECT>,
    /// Product: the FILE_OBJECT of the mount's handle (referenced); put into every child
    /// request's stack location, as the I/O manager does for requests on the handle.
    file: *mut FILE_OBJECT,
    /// Product: the mount's one handle (OBJ_KERNEL_HANDLE).
    #[cfg(not(feature = "wine-host"))]
    handle: wdk_sys::HANDLE,
    /// wine-host: the referenced driver object whose device is the host.
    #[cfg(feature = "wine-host")]
    driver: *mut wdk_sys::DRIVER_OBJECT,
    /// Held by every child request until it completed and was freed.
    children: RemoveLock,
}

// SAFETY: the raw pointers are referenced kernel objects valid until Drop; the kernel routines
// using them (IoBuildAsynchronousFsdRequest, IofCallDriver, ZwReadFile on a kernel handle)
// may be called from any thread.
unsafe impl Send for KernelHost {}
// SAFETY: as above; `&KernelHost` only starts independent requests.
unsafe impl Sync for KernelHost {}

impl KernelHost {
    /// Opens the host for a mount.
    ///
    /// IRQL: PASSIVE_LEVEL, in the context of the mount IOCTL's caller.
    pub fn open(params: &OpenParams<'_>) -> Result<KernelHost, Status> {
        #[cfg(not(feature = "wine-host"))]
        {
            if !params.wine_driver_name.is_empty() {
                return Err(Status::InvalidParameter);
            }
            product::open(params)
        }
        #[cfg(feature = "wine-host")]
        {
            wine::open(params)
        }
    }

    /// Completes the host description from its answers (shared by both builds).
    fn describe(
        kind: HostKind,
        size: u64,
        sector_size: Option<u32>,
        adapter: Option<(u32, u32, u32)>,
    ) -> (u64, HostLimits) {
        let mut limits = HostLimits {
            sector_size: 512,
            max_transfer: DEFAULT_MAX_TRANSFER,
            max_physical_pages: DEFAULT_MAX_PAGES,
            alignment_mask: 511,
            page_size: 4096,
        };
        if let Some(s) = sector_size.filter(|s| s.is_power_of_two() && (512..=4096).contains(s)) {
            limits.sector_size = s;
        }
        if let Some((max_transfer, max_pages, mask)) = adapter {
            if max_transfer >= 4096 {
                limits.max_transfer = max_transfer;
            }
            if max_pages >= 2 {
                limits.max_physical_pages = max_pages;
            }
            if mask < 4096 && (mask + 1).is_power_of_two() {
                limits.alignment_mask = mask;
            }
        }
        let _ = kind;
        (size, limits)
    }

    /// Starts one child request (READ, WRITE or FLUSH_BUFFERS) to the host device.
    fn start(&self, major: u32, offset: u64, buffer: *mut u8, length: usize) -> ChildIo<'_> {
        let guard = match self.children.acquire() {
            Ok(g) => g,
            Err(status) => return ChildIo::failed(status),
        };
        let Ok(length32) = u32::try_from(length) else {
            return ChildIo::failed(Status::InvalidParameter);
        };
        let Ok(offset) = i64::try_from(offset) else {
            return ChildIo::failed(Status::InvalidParameter);
        };
        let mut state = Box::new(ChildState {
            event: KernelEvent::new(),
            iosb: IO_STATUS_BLOCK::default(),
            irp: core::ptr::null_mut(),
        });
        let mut start = LARGE_INTEGER { QuadPart: offset };
        let flush = major == IRP_MJ_FLUSH_BUFFERS;
        // SAFETY: `device` is a referenced device object (type invariant); `buffer` covers
        // `length` bytes of nonpaged memory that the returned ChildIo borrows until the IRP is
        // freed; `start` and the status block outlive the call (the status block lives in
        // the boxed state until the IRP is freed). Flush takes no buffer, length or offset.
        let irp = unsafe {
            IoBuildAsynchronousFsdRequest(
                major,
                self.device.as_ptr(),
                if flush {
                    core::ptr::null_mut()
                } else {
                    buffer.cast()
                },
                if flush { 0 } else { length32 },
                if flush {
                    core::ptr::null_mut()
                } else {
                    &mut start
                },
                &mut state.iosb,
            )
        };
        let Some(irp) = NonNull::new(irp) else {
            return ChildIo::failed(Status::InsufficientResources);
        };
        state.irp = irp.as_ptr();
        let context: *mut ChildState = &mut *state;
        // SAFETY: a fresh IRP from IoBuildAsynchronousFsdRequest, ours until IofCallDriver.
        let irp_ref = unsafe { &mut *irp.as_ptr() };
        // SAFETY: before the IRP is sent, the Overlay arm of Tail is the one in use.
        let current = unsafe { irp_ref.Tail.Overlay.__bindgen_anon_2.__bindgen_anon_1 };
        // SAFETY: its CurrentStackLocation arm is the one in use (IoGetNextIrpStackLocation).
        let next = unsafe { current.CurrentStackLocation }.wrapping_sub(1);
        // SAFETY: IoBuildAsynchronousFsdRequest set up the next stack location (the
        // target's); it lies inside the IRP we own.
        let next = unsafe { &mut *next };
        next.FileObject = self.file;
        if major == IRP_MJ_WRITE {
            next.Flags |= SL_WRITE_THROUGH;
        }
        next.CompletionRoutine = Some(child_done);
        next.Context = context.cast();
        next.Control = SL_INVOKE_ALWAYS;
        // SAFETY: the IRP is fully built; the completion routine always runs (invoked on
        // success, error and cancel) and only signals `state`, which lives until the IRP is
        // freed. The result is read from the IRP after the event, so it is ignored here.
        let _ = unsafe { IofCallDriver(self.device.as_ptr(), irp.as_ptr()) };
        ChildIo {
            inner: Inner::Sent(state),
            _guard: Some(guard),
            _buffer: PhantomData,
        }
    }
}

/// A child request's state: its IRP and the event its completion routine sets. Boxed, so the
/// pointer the completion routine gets stays valid.
struct ChildState {
    event: KernelEvent,
    iosb: IO_STATUS_BLOCK,
    irp: *mut IRP,
}

/// Completion routine of a child request: runs at IRQL <= DISPATCH_LEVEL in an arbitrary
/// thread, signals the owner, keeps the IRP (freed by the owner after the wait).
unsafe extern "C" fn child_done(
    _device: *mut DEVICE_OBJECT,
    _irp: *mut IRP,
    context: PVOID,
) -> NTSTATUS {
    // SAFETY: `context` is the boxed ChildState of this IRP; its owner waits for this event
    // before it frees the state, so it is alive here.
    let state = unsafe { &*context.cast::<ChildState>() };
    state.event.set();
    STATUS_MORE_PROCESSING_REQUIRED
}

enum Inner {
    Failed(Status),
    Sent(Box<ChildState>),
    Done,
}

/// A started child request (the engine's `HostIo`). Waiting or dropping blocks until the
/// IRP completed, then frees it (R13: never abandoned, no timeout).
pub struct ChildIo<'a> {
    inner: Inner,
    _guard: Option<RemoveLockGuard<'a>>,
    _buffer: PhantomData<&'a mut [u8]>,
}

impl ChildIo<'_> {
    fn failed(status: Status) -> Self {
        ChildIo {
            inner: Inner::Failed(status),
            _guard: None,
            _buffer: PhantomData,
        }
    }

    fn finish(&mut self) -> Result<usize, Status> {
        match core::mem::replace(&mut self.inner, Inner::Done) {
            Inner::Failed(status) => Err(status),
            Inner::Done => Err(Status::IoDeviceError),
            Inner::Sent(state) => {
                state.event.wait();
                let irp = state.irp;
                // SAFETY: the completion routine ran and returned MORE_PROCESSING_REQUIRED, so
                // the I/O manager handed the IRP back to us; nobody else touches it.
                let irp_ref = unsafe { &*irp };
                // SAFETY: the Status arm of the status block is the one a driver completes with.
                let status = unsafe { irp_ref.IoStatus.__bindgen_anon_1.Status };
                let (information, mdl) = (irp_ref.IoStatus.Information, irp_ref.MdlAddress);
                free_child(irp, mdl);
                if status < 0 {
                    Err(Status::from_ntstatus(status as u32))
                } else {
                    Ok(information as usize)
                }
            }
        }
    }
}

/// Frees a completed child IRP and the MDL IoBuildAsynchronousFsdRequest made for it.
fn free_child(irp: *mut IRP, mdl: *mut wdk_sys::MDL) {
    if !mdl.is_null() {
        // Product: the MDL's pages were probed and locked by IoBuildAsynchronousFsdRequest.
        // wine-host: Wine maps the buffer without locking; its MmUnlockPages does nothing.
        #[cfg(not(feature = "wine-host"))]
        // SAFETY: the MDL belongs to our completed IRP and its pages are locked.
        unsafe {
            MmUnlockPages(mdl)
        };
        // SAFETY: the MDL belongs to our completed IRP and is no longer used.
        unsafe { IoFreeMdl(mdl) };
        // SAFETY: our IRP; clearing the pointer keeps IoFreeIrp (Wine's frees MDL chains)
        // from touching the freed MDL.
        unsafe { (*irp).MdlAddress = core::ptr::null_mut() };
    }
    // SAFETY: an IRP we built and got back from its completion routine; freed exactly once.
    unsafe { IoFreeIrp(irp) };
}

impl HostIo for ChildIo<'_> {
    fn wait(mut self) -> Result<usize, Status> {
        self.finish()
    }
}

impl Drop for ChildIo<'_> {
    fn drop(&mut self) {
        if matches!(self.inner, Inner::Sent(_)) {
            let _ = self.finish();
        }
    }
}

impl HostDevice for KernelHost {
    type Io<'a> = ChildIo<'a>;

    fn kind(&self) -> HostKind {
        self.kind
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn limits(&self) -> HostLimits {
        self.limits
    }
    fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> ChildIo<'a> {
        self.start(IRP_MJ_READ, offset, buf.as_mut_ptr(), buf.len())
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> ChildIo<'a> {
        // The target only reads a write's buffer.
        self.start(IRP_MJ_WRITE, offset, buf.as_ptr().cast_mut(), buf.len())
    }
    fn flush(&self) -> Result<(), Status> {
        self.start(IRP_MJ_FLUSH_BUFFERS, 0, core::ptr::null_mut(), 0)
            .wait()
            .map(|_| ())
    }

    #[cfg(not(feature = "wine-host"))]
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Status> {
        product::transfer(self.handle, false, offset, buf.as_mut_ptr(), buf.len())
    }
    /// Wine: no disk class driver sits between us and the test disk to split a large
    /// synchronous transfer by the adapter's limits, as Windows' disk stack does for the
    /// legacy queue's ZwReadFile; split it here with the engine's segmentation.
    #[cfg(feature = "wine-host")]
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Status> {
        let address = buf.as_ptr() as usize;
        self.in_segments(buf.len(), address, |at, n| {
            self.start_read(offset + at as u64, &mut buf[at..at + n])
                .wait()
        })
    }
    /// Wine: see `read`.
    #[cfg(feature = "wine-host")]
    fn write(&self, offset: u64, buf: &[u8]) -> Result<usize, Status> {
        self.in_segments(buf.len(), buf.as_ptr() as usize, |at, n| {
            self.start_write(offset + at as u64, &buf[at..at + n])
                .wait()
        })
    }
}

#[cfg(feature = "wine-host")]
impl KernelHost {
    /// Runs `transfer(position, length)` over `len` bytes at `address`, one host segment at a
    /// time; stops at the first error or short transfer. Returns the bytes moved.
    fn in_segments(
        &self,
        len: usize,
        address: usize,
        mut transfer: impl FnMut(usize, usize) -> Result<usize, Status>,
    ) -> Result<usize, Status> {
        let limits = SegmentLimits::direct(&self.limits, self.limits.sector_size);
        let mut done = 0;
        while done < len {
            let n = limits.next_len(len - done, address + done);
            let got = transfer(done, n)?;
            done += got;
            if got < n {
                break;
            }
        }
        Ok(done)
    }
}

impl Drop for KernelHost {
    fn drop(&mut self) {
        // R13: wait until every child request completed and was freed.
        if let Ok(guard) = self.children.acquire() {
            RemoveLock::release_and_wait(guard);
        }
        #[cfg(not(feature = "wine-host"))]
        {
            // SAFETY: the reference taken by ObReferenceObjectByHandle at open.
            unsafe { ObfDereferenceObject(self.file.cast()) };
            // SAFETY: our kernel handle from ZwCreateFile; closed once.
            let _ = unsafe { wdk_sys::ntddk::ZwClose(self.handle) };
        }
        #[cfg(feature = "wine-host")]
        // SAFETY: the reference taken by ObReferenceObjectByName at open.
        unsafe {
            ObfDereferenceObject(self.driver.cast())
        };
    }
}

/// Reads a little-endian u32 / u64 from a reply buffer.
fn le32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}
fn le64(b: &[u8], at: usize) -> Option<u64> {
    let lo = le32(b, at)?;
    let hi = le32(b, at + 4)?;
    Some(u64::from(lo) | (u64::from(hi) << 32))
}

/// The answers of [`probe`]: size, sector size, adapter (max transfer, max pages, mask).
type Probed = (Option<u64>, Option<u32>, Option<(u32, u32, u32)>);

/// Asks the host for its size, sector size and adapter limits through `query` (a device
/// control sent the build's way); `None` where it did not answer.
fn probe(mut query: impl FnMut(u32, &mut [u8], usize) -> Result<usize, Status>) -> Probed {
    let mut b = [0u8; 64];
    let size = query(ioctl::DISK_GET_LENGTH_INFO, &mut b, 0)
        .ok()
        .filter(|n| *n >= 8)
        .and_then(|_| le64(&b, 0));
    let mut b = [0u8; 64];
    let sector = query(ioctl::DISK_GET_DRIVE_GEOMETRY, &mut b, 0)
        .ok()
        .filter(|n| *n >= 24)
        .and_then(|_| le32(&b, 20));
    let mut b = [0u8; 64];
    b[0..4].copy_from_slice(&STORAGE_ADAPTER_PROPERTY.to_le_bytes()); // PropertyId
                                                                      // QueryType 0 = PropertyStandardQuery (bytes 4..8 stay zero); 12-byte query.
    let adapter = query(ioctl::STORAGE_QUERY_PROPERTY, &mut b, 12)
        .ok()
        .filter(|n| *n >= 20)
        .and_then(|_| Some((le32(&b, 8)?, le32(&b, 12)?, le32(&b, 16)?)));
    (size, sector, adapter)
}

#[cfg(not(feature = "wine-host"))]
mod product {
    //! Real Windows: one ZwCreateFile handle, the device object behind it, Zw* I/O on it.

    use super::*;
    use wdk_sys::ntddk::{
        IoGetRelatedDeviceObject, ObReferenceObjectByHandle, ZwClose, ZwCreateFile,
        ZwDeviceIoControlFile, ZwFsControlFile, ZwQueryInformationFile, ZwReadFile, ZwWriteFile,
    };
    use wdk_sys::{
        _FILE_INFORMATION_CLASS::FileStandardInformation, _MODE::KernelMode, FILE_OPEN,
        FILE_SHARE_READ, FILE_SHARE_WRITE, GENERIC_READ, GENERIC_WRITE, HANDLE, OBJECT_ATTRIBUTES,
        OBJ_CASE_INSENSITIVE, OBJ_FORCE_ACCESS_CHECK, OBJ_KERNEL_HANDLE, SYNCHRONIZE,
        UNICODE_STRING,
    };

    const FILE_WRITE_THROUGH: u32 = 0x0000_0002;
    const FILE_NO_INTERMEDIATE_BUFFERING: u32 = 0x0000_0008;
    const FILE_SYNCHRONOUS_IO_NONALERT: u32 = 0x0000_0020;
    const FILE_RANDOM_ACCESS: u32 = 0x0000_0800;
    const FILE_ATTRIBUTE_NORMAL: u32 = 0x80;
    /// IO_TYPE_FILE: the Type field of a FILE_OBJECT.
    const IO_TYPE_FILE: i16 = 5;

    /// `\Device\...` paths are raw devices; anything else (`\??\C:\...`) is a container file.
    fn is_device_path(path: &[u16]) -> bool {
        let prefix: Vec<u16> = "\\Device\\".encode_utf16().collect();
        path.len() > prefix.len()
            && path[..prefix.len()].iter().zip(&prefix).all(|(a, b)| {
                (*a as u8 as char).eq_ignore_ascii_case(&(*b as u8 as char)) && *a < 128
            })
    }

    pub(super) fn open(params: &OpenParams<'_>) -> Result<KernelHost, Status> {
        let raw = is_device_path(params.path);
        let mut path: Vec<u16> = params.path.to_vec();
        let bytes = u16::try_from(path.len() * 2).map_err(|_| Status::InvalidParameter)?;
        let mut name = UNICODE_STRING {
            Length: bytes,
            MaximumLength: bytes,
            Buffer: path.as_mut_ptr(),
        };
        let mut attributes = OBJECT_ATTRIBUTES {
            Length: core::mem::size_of::<OBJECT_ATTRIBUTES>() as u32,
            RootDirectory: core::ptr::null_mut(),
            ObjectName: &mut name,
            // The open is checked against the mount IOCTL's caller (we run in its thread): a
            // user can only mount a host they could open themselves.
            Attributes: OBJ_CASE_INSENSITIVE | OBJ_KERNEL_HANDLE | OBJ_FORCE_ACCESS_CHECK,
            SecurityDescriptor: core::ptr::null_mut(),
            SecurityQualityOfService: core::ptr::null_mut(),
        };
        let access = if params.read_only {
            GENERIC_READ | SYNCHRONIZE
        } else {
            GENERIC_READ | GENERIC_WRITE | SYNCHRONIZE
        };
        let share = if params.shared {
            FILE_SHARE_READ | FILE_SHARE_WRITE
        } else {
            0
        };
        let options = FILE_RANDOM_ACCESS
            | FILE_WRITE_THROUGH
            | FILE_SYNCHRONOUS_IO_NONALERT
            | FILE_NO_INTERMEDIATE_BUFFERING;
        let mut handle: HANDLE = core::ptr::null_mut();
        let mut iosb = IO_STATUS_BLOCK::default();
        // SAFETY: every pointer is valid for the call; `name` describes `path`, alive here.
        let status = unsafe {
            ZwCreateFile(
                &mut handle,
                access,
                &mut attributes,
                &mut iosb,
                core::ptr::null_mut(),
                FILE_ATTRIBUTE_NORMAL,
                share,
                FILE_OPEN,
                options,
                core::ptr::null_mut(),
                0,
            )
        };
        if status < 0 {
            return Err(Status::from_ntstatus(status as u32));
        }
        let mut object: PVOID = core::ptr::null_mut();
        // SAFETY: `handle` is the kernel handle just opened; no type filter (checked below).
        let status = unsafe {
            ObReferenceObjectByHandle(
                handle,
                access,
                core::ptr::null_mut(),
                KernelMode as i8,
                &mut object,
                core::ptr::null_mut(),
            )
        };
        let file = object.cast::<FILE_OBJECT>();
        // SAFETY: on success `object` is a referenced object; its first field is the Type.
        if status < 0 || unsafe { (*file).Type } != IO_TYPE_FILE {
            if status >= 0 {
                // SAFETY: the reference just taken.
                unsafe { ObfDereferenceObject(object) };
            }
            // SAFETY: our handle, closed once.
            let _ = unsafe { ZwClose(handle) };
            return Err(Status::InvalidParameter);
        }
        // SAFETY: `file` is a referenced FILE_OBJECT; the device stack behind it lives as
        // long as the file object (R10: the same handle, no second open).
        let device = unsafe { IoGetRelatedDeviceObject(file) };
        let Some(device) = NonNull::new(device) else {
            // SAFETY: as above, undo the reference and the handle.
            unsafe { ObfDereferenceObject(object) };
            // SAFETY: our handle, closed once.
            let _ = unsafe { ZwClose(handle) };
            return Err(Status::InvalidDeviceRequest);
        };
        let mut host = KernelHost {
            kind: if raw {
                HostKind::RawDevice
            } else {
                HostKind::FileContainer
            },
            size: 0,
            limits: HostLimits::unlimited(),
            device,
            file,
            handle,
            children: RemoveLock::new(),
        };
        if raw {
            // Lets reads and writes reach the whole device past the file system's idea of
            // its end (VeraCrypt does the same); harmless when refused.
            let _ = fs_control(handle, ioctl::FSCTL_ALLOW_EXTENDED_DASD_IO);
        }
        let (size, sector, adapter) =
            probe(|code, buf, input| device_control(handle, code, buf, input));
        let size = if raw { size } else { file_size(handle) };
        let size = size.ok_or(Status::InvalidDeviceRequest)?;
        let (size, limits) = KernelHost::describe(host.kind, size, sector, adapter);
        host.size = size;
        host.limits = limits;
        Ok(host)
    }

    fn device_control(
        handle: HANDLE,
        code: u32,
        buf: &mut [u8],
        input: usize,
    ) -> Result<usize, Status> {
        let mut iosb = IO_STATUS_BLOCK::default();
        let len = buf.len() as u32;
        let ptr = buf.as_mut_ptr().cast();
        // SAFETY: `buf` is valid for `len` bytes as input (first `input` bytes) and output;
        // the handle is synchronous, so the call returns when the request is done.
        let status = unsafe {
            ZwDeviceIoControlFile(
                handle,
                core::ptr::null_mut(),
                None,
                core::ptr::null_mut(),
                &mut iosb,
                code,
                if input == 0 {
                    core::ptr::null_mut()
                } else {
                    ptr
                },
                input as u32,
                ptr,
                len,
            )
        };
        if status < 0 {
            return Err(Status::from_ntstatus(status as u32));
        }
        Ok(iosb.Information as usize)
    }

    fn fs_control(handle: HANDLE, code: u32) -> Result<(), Status> {
        let mut iosb = IO_STATUS_BLOCK::default();
        // SAFETY: a control without buffers on our synchronous kernel handle.
        let status = unsafe {
            ZwFsControlFile(
                handle,
                core::ptr::null_mut(),
                None,
                core::ptr::null_mut(),
                &mut iosb,
                code,
                core::ptr::null_mut(),
                0,
                core::ptr::null_mut(),
                0,
            )
        };
        if status < 0 {
            return Err(Status::from_ntstatus(status as u32));
        }
        Ok(())
    }

    /// EndOfFile of a container (FILE_STANDARD_INFORMATION: AllocationSize, EndOfFile, ...).
    fn file_size(handle: HANDLE) -> Option<u64> {
        let mut info = [0u64; 4];
        let mut iosb = IO_STATUS_BLOCK::default();
        // SAFETY: `info` (32 bytes, 8-aligned) holds a FILE_STANDARD_INFORMATION (24 bytes).
        let status = unsafe {
            ZwQueryInformationFile(
                handle,
                &mut iosb,
                info.as_mut_ptr().cast(),
                core::mem::size_of_val(&info) as u32,
                FileStandardInformation,
            )
        };
        (status >= 0).then_some(info[1])
    }

    /// Synchronous ZwReadFile/ZwWriteFile on the mount's handle (the legacy I/O thread's host
    /// access, as VeraCrypt's).
    pub(super) fn transfer(
        handle: HANDLE,
        write: bool,
        offset: u64,
        buf: *mut u8,
        len: usize,
    ) -> Result<usize, Status> {
        let len = u32::try_from(len).map_err(|_| Status::InvalidParameter)?;
        let offset = i64::try_from(offset).map_err(|_| Status::InvalidParameter)?;
        let mut at = LARGE_INTEGER { QuadPart: offset };
        let mut iosb = IO_STATUS_BLOCK::default();
        let status = if write {
            // SAFETY: `buf` holds `len` readable bytes for the whole (synchronous) call.
            unsafe {
                ZwWriteFile(
                    handle,
                    core::ptr::null_mut(),
                    None,
                    core::ptr::null_mut(),
                    &mut iosb,
                    buf.cast(),
                    len,
                    &mut at,
                    core::ptr::null_mut(),
                )
            }
        } else {
            // SAFETY: `buf` holds `len` writable bytes for the whole (synchronous) call.
            unsafe {
                ZwReadFile(
                    handle,
                    core::ptr::null_mut(),
                    None,
                    core::ptr::null_mut(),
                    &mut iosb,
                    buf.cast(),
                    len,
                    &mut at,
                    core::ptr::null_mut(),
                )
            }
        };
        if status < 0 {
            return Err(Status::from_ntstatus(status as u32));
        }
        Ok(iosb.Information as usize)
    }
}

#[cfg(feature = "wine-host")]
mod wine {
    //! Wine 8.0: the host is the first device of a named driver in the same winedevice
    //! process (docs/build-on-linux.md explains why ZwCreateFile cannot be used there).

    use super::*;
    use wdk_sys::ntddk::{IoBuildDeviceIoControlRequest, ObReferenceObjectByName};
    use wdk_sys::{_MODE::KernelMode, DRIVER_OBJECT, OBJ_CASE_INSENSITIVE, UNICODE_STRING};

    /// STATUS_PENDING.
    const STATUS_PENDING: NTSTATUS = 0x103;
    /// IO_TYPE_DRIVER: the Type field of a DRIVER_OBJECT.
    const IO_TYPE_DRIVER: i16 = 4;

    pub(super) fn open(params: &OpenParams<'_>) -> Result<KernelHost, Status> {
        if params.wine_driver_name.is_empty() {
            return Err(Status::InvalidParameter);
        }
        let mut name: Vec<u16> = "\\Driver\\".encode_utf16().collect();
        name.extend_from_slice(params.wine_driver_name);
        let bytes = u16::try_from(name.len() * 2).map_err(|_| Status::InvalidParameter)?;
        let mut unicode = UNICODE_STRING {
            Length: bytes,
            MaximumLength: bytes,
            Buffer: name.as_mut_ptr(),
        };
        let mut object: PVOID = core::ptr::null_mut();
        // SAFETY: `unicode` describes `name`, alive for the call; no access state, type or
        // parse context (Wine's implementation looks the name up among loaded drivers).
        let status = unsafe {
            ObReferenceObjectByName(
                &mut unicode,
                OBJ_CASE_INSENSITIVE,
                core::ptr::null_mut(),
                0,
                core::ptr::null_mut(),
                KernelMode as i8,
                core::ptr::null_mut(),
                &mut object,
            )
        };
        if status < 0 || object.is_null() {
            return Err(Status::Host(0xC000_0034)); // STATUS_OBJECT_NAME_NOT_FOUND
        }
        let driver = object.cast::<DRIVER_OBJECT>();
        // SAFETY: a referenced object, alive until we dereference it.
        let driver_ref = unsafe { &*driver };
        let (kind, device) = (driver_ref.Type, driver_ref.DeviceObject);
        // Wine 8.0 leaves a driver object's Type at 0; the name under \Driver\ already says
        // what it is, so 0 is accepted here (this module is the Wine build only).
        let device = match NonNull::new(device) {
            Some(d) if kind == IO_TYPE_DRIVER || kind == 0 => d,
            _ => {
                // SAFETY: the reference just taken.
                unsafe { ObfDereferenceObject(object) };
                return Err(Status::Host(0xC000_000E)); // STATUS_NO_SUCH_DEVICE
            }
        };
        let mut host = KernelHost {
            kind: HostKind::RawDevice,
            size: 0,
            limits: HostLimits::unlimited(),
            device,
            file: core::ptr::null_mut(),
            driver,
            children: RemoveLock::new(),
        };
        let (size, sector, adapter) =
            probe(|code, buf, input| device_control(device, code, buf, input));
        let size = size.ok_or(Status::InvalidDeviceRequest)?;
        let (size, limits) = KernelHost::describe(HostKind::RawDevice, size, sector, adapter);
        host.size = size;
        host.limits = limits;
        Ok(host)
    }

    /// A METHOD_BUFFERED device control IRP to `device`, input and output in `buf`.
    fn device_control(
        device: NonNull<DEVICE_OBJECT>,
        code: u32,
        buf: &mut [u8],
        input: usize,
    ) -> Result<usize, Status> {
        let event = KernelEvent::new();
        let mut iosb = IO_STATUS_BLOCK::default();
        let len = buf.len() as u32;
        let ptr: PVOID = buf.as_mut_ptr().cast();
        // SAFETY: `buf` serves as input (first `input` bytes) and output, alive until the
        // request completed (we wait below); `event` and `iosb` live until then too.
        let irp = unsafe {
            IoBuildDeviceIoControlRequest(
                code,
                device.as_ptr(),
                ptr,
                input as u32,
                ptr,
                len,
                0,
                event.as_ptr(),
                &mut iosb,
            )
        };
        if irp.is_null() {
            return Err(Status::InsufficientResources);
        }
        // SAFETY: a complete IRP for `device`; the I/O manager frees it on completion.
        let status = unsafe { IofCallDriver(device.as_ptr(), irp) };
        let status = if status == STATUS_PENDING {
            event.wait();
            // SAFETY: the status block was written before the event was set.
            unsafe { iosb.__bindgen_anon_1.Status }
        } else {
            status
        };
        if status < 0 {
            return Err(Status::from_ntstatus(status as u32));
        }
        Ok(iosb.Information as usize)
    }
}
