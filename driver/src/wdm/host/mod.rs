//! The host device under a volume: [`KernelHost`], the engine's `HostDevice`.
//!
//! Owns: the host object (its device, references and size) and its `HostDevice` methods; one
//! file per piece below: opening it and probing its limits (`open`), the build's lookup of the
//! device (`product`: one ZwCreateFile handle, as VeraCrypt opens it; `wine`: the test disk
//! driver's device object found by name), and the child requests sent to it (`child_irp`: one
//! per segment, in one of the volume's child-operation slots allocated at mount, completed into
//! the slot's KEVENT). Never: decides what to read or write (the engine's paths do).
//!
//! docs/review.md R10: the device object that child requests go to comes from the mount's single
//! handle (ObReferenceObjectByHandle -> FILE_OBJECT -> IoGetRelatedDeviceObject); no second
//! handle exists, so an exclusive mount keeps share mode 0. R13: every child request holds the
//! host's remove lock until its completion routine ran and its slot was given back; dropping
//! the host waits for all of them. W11: the host device object is referenced (ObfReferenceObject)
//! from open to drop, on top of the file or driver object it was found through.

mod child_irp;
mod open;
#[cfg(not(feature = "wine-host"))]
mod product;
#[cfg(feature = "wine-host")]
mod wine;
use core::ptr::NonNull;

use wdk_sys::ntddk::{ObfDereferenceObject, ObfReferenceObject};
use wdk_sys::{DEVICE_OBJECT, FILE_OBJECT, IRP_MJ_FLUSH_BUFFERS, IRP_MJ_READ, IRP_MJ_WRITE};

use super::remove_lock::RemoveLock;
#[cfg(feature = "wine-host")]
use crate::io::SegmentLimits;
use crate::platform::{Detached, HostDevice, HostIo, HostKind, HostLimits, KeptRead, Origin};
use crate::Status;

pub use child_irp::ChildIo;
use child_irp::{ChildRequest, ChildSlots};
pub use open::OpenParams;
#[cfg(not(feature = "wine-host"))]
pub(crate) use product::{fs_control, zw_open, ZwName, ZwOpen};

/// The device a volume lives on. Dropping it waits for every child request (R13), then
/// releases the device reference and closes the handle.
///
/// # Invariants
/// `device` is referenced itself (W11) and through `file` (product) or `driver` (wine-host),
/// and `file` is null or a referenced FILE_OBJECT (product: `handle` is the mount's open
/// kernel handle), from `open` until `drop`, which first waits for every child request (each
/// holds `children` and one of `slots`).
pub struct KernelHost {
    kind: HostKind,
    size: u64,
    limits: HostLimits,
    /// The device child requests are sent to (referenced, and through `file` or `driver`).
    device: NonNull<DEVICE_OBJECT>,
    /// The child-operation slots (W6): one IRP, MDL and event per host operation in flight.
    slots: ChildSlots,
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
    /// A raw host that answered IOCTL_DISK_IS_WRITABLE with STATUS_MEDIA_WRITE_PROTECTED (W11).
    write_protected: bool,
    /// W1: the address of the volume device of this driver the host file lives on (a
    /// container on a file system mounted on one of our volumes), for the order of a forced
    /// dismount of every volume; only compared, never dereferenced.
    below: Option<usize>,
}

// SAFETY: the raw pointers are referenced kernel objects valid until Drop; the kernel routines
// using them (IofCallDriver, ZwReadFile on a kernel handle) may be called from any thread.
unsafe impl Send for KernelHost {}
// SAFETY: as above; `&KernelHost` only starts independent requests.
unsafe impl Sync for KernelHost {}

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

impl KernelHost {
    /// True when the raw host answered IOCTL_DISK_IS_WRITABLE with STATUS_MEDIA_WRITE_PROTECTED:
    /// the mount is then read-only whatever was asked, as VeraCrypt's (W11).
    pub fn write_protected(&self) -> bool {
        self.write_protected
    }

    /// W1: the address of the volume device of this driver the host file lives on, if any
    /// (compare with `VolumeDevice::device_object`; the host's file object keeps that device
    /// referenced, so the address names no other device while this host is open).
    pub fn own_volume_below(&self) -> Option<usize> {
        self.below
    }

    /// The host device's AlignmentRequirement (the volume device takes it, W11).
    pub fn alignment_requirement(&self) -> u32 {
        // SAFETY: the device is referenced until `self` drops (type invariant); the field is
        // set before a device is attached and not changed afterwards.
        unsafe { self.device.as_ref().AlignmentRequirement }
    }

    /// References `device` for the mount's lifetime and allocates the child-operation slots
    /// sized for its stack; on failure the reference is dropped again.
    ///
    /// # Safety
    /// `device` is a device object kept alive by a reference the caller holds.
    unsafe fn reference_device(device: NonNull<DEVICE_OBJECT>) -> Result<ChildSlots, Status> {
        // SAFETY: a live device object (contract); the reference is ours until Drop.
        unsafe { ObfReferenceObject(device.as_ptr().cast()) };
        // SAFETY: as above.
        let stack_size = unsafe { device.as_ref().StackSize };
        ChildSlots::new(stack_size).inspect_err(|_| {
            // SAFETY: the reference just taken.
            unsafe { ObfDereferenceObject(device.as_ptr().cast()) };
        })
    }
}

impl Drop for KernelHost {
    fn drop(&mut self) {
        // R13: wait until every child request completed and was freed.
        if let Ok(guard) = self.children.acquire() {
            RemoveLock::release_and_wait(guard);
        }
        // The slots (no IRP in flight now) are freed when the fields drop, after this body:
        // they touch neither the device nor the file object.
        // SAFETY: the reference taken at open (W11).
        unsafe { ObfDereferenceObject(self.device.as_ptr().cast()) };
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

impl HostDevice for KernelHost {
    type Io<'a> = ChildIo<'a>;
    type Read<'a> = KeptRead<'a, ChildIo<'a>>;

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
        self.start_read_for(offset, buf, Origin::default())
    }
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
        self.start_read_kept_for(offset, buf, Origin::default())
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> ChildIo<'a> {
        self.start_write_for(offset, buf, Origin::default())
    }
    /// Without `origin.memory`, `buf` is an engine buffer (nonpaged pool); with it, `buf` is the
    /// system mapping of the caller's bytes the origin names (an IrpBuf's piece).
    fn start_read_for<'a>(&'a self, offset: u64, buf: &'a mut [u8], origin: Origin) -> ChildIo<'a> {
        let request = ChildRequest {
            major: IRP_MJ_READ,
            offset,
            buffer: buf.as_mut_ptr(),
            length: buf.len(),
            origin,
        };
        // SAFETY: `buf` is borrowed mutably for as long as the returned ChildIo, which waits
        // for the IRP before it goes; it is an engine buffer in nonpaged pool, or the IrpBuf
        // piece `origin.memory` was taken from (its upper IRP's MDL stays locked until the
        // upper request completes, after this child).
        unsafe { self.start(request) }
    }
    fn start_read_kept_for<'a>(
        &'a self,
        offset: u64,
        buf: &'a mut [u8],
        origin: Origin,
    ) -> Self::Read<'a> {
        let request = ChildRequest {
            major: IRP_MJ_READ,
            offset,
            buffer: buf.as_mut_ptr(),
            length: buf.len(),
            origin,
        };
        // SAFETY: the child IRP's MDL describes `buf` (an engine buffer in nonpaged pool, or
        // the IrpBuf piece `origin.memory` was taken from, whose upper IRP's MDL stays locked
        // until the upper request completes, after this child). `buf` stays borrowed mutably
        // inside the returned KeptRead, which hands it out only after ChildIo waited for the
        // IRP (and whose drop waits too); the engine does not touch it meanwhile.
        let io = unsafe { self.start(request) };
        KeptRead::new(io, buf)
    }
    fn start_write_for<'a>(&'a self, offset: u64, buf: &'a [u8], origin: Origin) -> ChildIo<'a> {
        let request = ChildRequest {
            major: IRP_MJ_WRITE,
            offset,
            buffer: buf.as_ptr().cast_mut(),
            length: buf.len(),
            origin,
        };
        // SAFETY: as in `start_read_for`; the target only reads a write's buffer.
        unsafe { self.start(request) }
    }
    /// A child READ whose completion routine reports it (`child_irp.rs`, `detached_done`):
    /// only into the caller's buffer (`origin.memory`), only in a slot free now.
    fn start_read_detached(
        &self,
        offset: u64,
        buf: &mut [u8],
        origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        let request = ChildRequest {
            major: IRP_MJ_READ,
            offset,
            buffer: buf.as_mut_ptr(),
            length: buf.len(),
            origin,
        };
        // SAFETY: `buf` is the system mapping of the IrpBuf piece `origin.memory` names
        // (`start_detached` refuses a request without one); its upper IRP's MDL stays locked
        // until the upper request completes, which the engine does only after `then` was told
        // (the request and its buffer wait untouched in the engine's slot until then).
        unsafe { self.start_detached(request, then) }
    }
    /// A child WRITE of a detached slot's bounce buffer (nonpaged pool), as
    /// `start_read_detached` for reads.
    fn start_write_detached(
        &self,
        offset: u64,
        buf: &[u8],
        origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        let request = ChildRequest {
            major: IRP_MJ_WRITE,
            offset,
            buffer: buf.as_ptr().cast_mut(),
            length: buf.len(),
            origin,
        };
        // SAFETY: `buf` is a detached slot's bounce buffer, nonpaged pool the engine keeps
        // allocated and untouched until `then` was told (`origin.memory` is None for it;
        // `start_detached` refuses a write naming caller memory); a write only reads it.
        unsafe { self.start_detached(request, then) }
    }
    /// R13: the volume's dismount waits here for the routines of detached requests.
    fn drain(&self) {
        self.drain_children();
    }
    fn flush(&self) -> Result<(), Status> {
        let request = ChildRequest {
            major: IRP_MJ_FLUSH_BUFFERS,
            offset: 0,
            buffer: core::ptr::null_mut(),
            length: 0,
            origin: Origin::default(),
        };
        // SAFETY: a flush takes no buffer.
        unsafe { self.start(request) }.wait().map(|_| ())
    }

    #[cfg(not(feature = "wine-host"))]
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Status> {
        // SAFETY: the mount's open handle (type invariant); `buf` is borrowed for the
        // synchronous call.
        unsafe { product::transfer(self.handle, false, offset, buf.as_mut_ptr(), buf.len()) }
    }
    /// The legacy I/O thread's writes go out as ZwWriteFile on the mount's handle, as its reads
    /// do and as VeraCrypt's do (without this, the trait's default sent them as child IRPs).
    #[cfg(not(feature = "wine-host"))]
    fn write(&self, offset: u64, buf: &[u8]) -> Result<usize, Status> {
        // SAFETY: the mount's open handle (type invariant); `buf` is borrowed for the
        // synchronous call, and a write only reads through the pointer.
        unsafe {
            product::transfer(
                self.handle,
                true,
                offset,
                buf.as_ptr().cast_mut(),
                buf.len(),
            )
        }
    }
    /// Wine: no disk class driver sits between us and the test disk to split a large
    /// synchronous transfer by the adapter's limits, as Windows' disk stack does for the
    /// legacy queue's ZwReadFile; split it here with the engine's segmentation. The legacy
    /// queue may read into the caller's mapping rather than an engine buffer; the slot's MDL
    /// describes it as nonpaged all the same, which is exact under Wine (its MDLs carry no page
    /// frames, only the address). The product build never does this (ZwReadFile above).
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
