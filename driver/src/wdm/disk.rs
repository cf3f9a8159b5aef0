//! The disk device of a mounted volume: `\Device\VcVolume<N>`, `\DosDevices\VcVolume<N>` and
//! optionally `\DosDevices\X:`.
//!
//! Owns: creating and deleting the device and its links, the device extension (a remove lock
//! and the volume), handing READ/WRITE/FLUSH_BUFFERS IRPs to `Volume::dispatch` (pended; the
//! engine completes each exactly once), and the disk IOCTLs a file system and DiskSpd ask.
//! Never: validates or orders I/O (the engine does).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};

use wdk_sys::ntddk::{
    IoAcquireRemoveLockEx, IoCreateDevice, IoCreateSymbolicLink, IoDeleteDevice,
    IoDeleteSymbolicLink, IoInitializeRemoveLockEx, IoReleaseCancelSpinLock,
    IoReleaseRemoveLockAndWaitEx, IoReleaseRemoveLockEx,
};
use wdk_sys::{
    DEVICE_OBJECT, DO_DEVICE_INITIALIZING, DO_DIRECT_IO, DRIVER_OBJECT, FILE_DEVICE_DISK,
    FILE_DEVICE_SECURE_OPEN, IO_REMOVE_LOCK, IRP, IRP_MJ_CLEANUP, IRP_MJ_CLOSE, IRP_MJ_CREATE,
    IRP_MJ_DEVICE_CONTROL, IRP_MJ_FLUSH_BUFFERS, IRP_MJ_READ, IRP_MJ_WRITE, NTSTATUS,
    UNICODE_STRING,
};

use super::irp::Irp;
use super::platform::KernelPlatform;
use super::{nt, DRIVER_TAG};
use crate::platform::UpperRequest;
use crate::volume::Volume;
use crate::Status;

const REMLOCK_SIZE: u32 = core::mem::size_of::<IO_REMOVE_LOCK>() as u32;
/// Marks a volume device's extension (the control device has none).
const EXTENSION_MAGIC: u32 = u32::from_le_bytes(*b"vcVo");

/// Statuses the disk IOCTLs return besides the engine's.
pub(crate) mod nts {
    use crate::Status;
    pub const BUFFER_TOO_SMALL: Status = Status::Host(0xC000_0023);
    pub const BUFFER_OVERFLOW: Status = Status::Host(0x8000_0005);
    pub const NOT_SUPPORTED: Status = Status::Host(0xC000_00BB);
    pub const NOT_FOUND: Status = Status::Host(0xC000_0225);
    pub const DELETE_PENDING: Status = Status::Host(0xC000_0056);
    pub const PENDING: u32 = 0x0000_0103;
}

/// Disk IOCTL codes served.
mod code {
    pub const DISK_GET_DRIVE_GEOMETRY: u32 = 0x0007_0000;
    pub const DISK_GET_DRIVE_GEOMETRY_EX: u32 = 0x0007_00A0;
    pub const DISK_GET_LENGTH_INFO: u32 = 0x0007_405C;
    pub const DISK_GET_PARTITION_INFO: u32 = 0x0007_4004;
    pub const DISK_GET_PARTITION_INFO_EX: u32 = 0x0007_0048;
    pub const DISK_IS_WRITABLE: u32 = 0x0007_0024;
    pub const DISK_VERIFY: u32 = 0x0007_0014;
    pub const DISK_CHECK_VERIFY: u32 = 0x0007_4800;
    pub const DISK_GET_DISK_ATTRIBUTES: u32 = 0x0007_00F0;
    pub const STORAGE_CHECK_VERIFY: u32 = 0x002D_4800;
    pub const STORAGE_CHECK_VERIFY2: u32 = 0x002D_0800;
    pub const STORAGE_QUERY_PROPERTY: u32 = 0x002D_1400;
    pub const MOUNTDEV_QUERY_UNIQUE_ID: u32 = 0x004D_0000;
    pub const MOUNTDEV_QUERY_DEVICE_NAME: u32 = 0x004D_0008;
    pub const MOUNTDEV_QUERY_SUGGESTED_LINK_NAME: u32 = 0x004D_000C;
}

/// A mounted volume with its device.
pub struct MountedVolume {
    /// The id the mount reply gave (also the N of `VcVolume<N>`).
    pub id: u32,
    /// `MOUNT_*` flags of the mount request.
    pub flags: u32,
    /// Drive letter, if the mount asked for one.
    pub drive_letter: Option<char>,
    /// The engine's volume.
    pub volume: Arc<Volume<KernelPlatform>>,
    /// Handles open on the volume device (CREATE minus CLOSE).
    pub open_handles: AtomicU32,
    device_name: Vec<u16>,
    link_name: Vec<u16>,
    letter_link: Option<Vec<u16>>,
    read_only: bool,
    sector_size: u32,
}

/// The volume device's extension.
#[repr(C)]
struct Extension {
    magic: u32,
    /// Held by each dispatch call; dismount releases and waits before the volume goes.
    lock: IO_REMOVE_LOCK,
    /// `Arc::into_raw` of the mounted volume; null after dismount.
    volume: *const MountedVolume,
}

/// The created device, owned by the control module's table entry.
pub struct VolumeDevice {
    device: NonNull<DEVICE_OBJECT>,
    mounted: Arc<MountedVolume>,
}

// SAFETY: the device object is ours until `delete`; its routines may run on any thread.
unsafe impl Send for VolumeDevice {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for VolumeDevice {}

fn unicode(chars: &mut [u16]) -> UNICODE_STRING {
    let bytes = (chars.len() * 2) as u16;
    UNICODE_STRING {
        Length: bytes,
        MaximumLength: bytes,
        Buffer: chars.as_mut_ptr(),
    }
}

fn utf16(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

fn decimal(mut n: u32) -> Vec<u16> {
    let mut digits = Vec::new();
    loop {
        digits.push(u16::from(b'0') + (n % 10) as u16);
        n /= 10;
        if n == 0 {
            break;
        }
    }
    digits.reverse();
    digits
}

impl VolumeDevice {
    /// Creates the device `\Device\VcVolume<id>` and its links for `volume`, with the
    /// descriptor that limits raw opens to system, administrators and `owner` (W4).
    ///
    /// IRQL: PASSIVE_LEVEL.
    ///
    /// # Safety
    /// `driver` is this driver's object.
    pub unsafe fn create(
        driver: *mut DRIVER_OBJECT,
        id: u32,
        flags: u32,
        drive_letter: Option<char>,
        read_only: bool,
        volume: Arc<Volume<KernelPlatform>>,
        owner: &crate::access::Sid,
    ) -> Result<VolumeDevice, Status> {
        let mut device_name = utf16("\\Device\\VcVolume");
        device_name.extend(decimal(id));
        let mut link_name = utf16("\\DosDevices\\VcVolume");
        link_name.extend(decimal(id));
        let letter_link = drive_letter.map(|c| {
            let mut l = utf16("\\DosDevices\\");
            l.push(c as u16);
            l.push(u16::from(b':'));
            l
        });
        let sector_size = volume_sector(&volume);
        let mounted = Arc::new(MountedVolume {
            id,
            flags,
            drive_letter,
            volume,
            open_handles: AtomicU32::new(0),
            device_name,
            link_name,
            letter_link,
            read_only,
            sector_size,
        });
        let mut name_copy = mounted.device_name.clone();
        let mut name = unicode(&mut name_copy);
        let mut device: *mut DEVICE_OBJECT = core::ptr::null_mut();
        // SAFETY: `driver` is our driver object (contract); the name is valid for the call.
        let status = unsafe {
            IoCreateDevice(
                driver,
                core::mem::size_of::<Extension>() as u32,
                &mut name,
                FILE_DEVICE_DISK,
                FILE_DEVICE_SECURE_OPEN,
                0,
                &mut device,
            )
        };
        if status < 0 {
            return Err(Status::from_ntstatus(status as u32));
        }
        let Some(device) = NonNull::new(device) else {
            return Err(Status::InsufficientResources);
        };
        // SAFETY: a device we just created and nobody dispatches to yet
        // (DO_DEVICE_INITIALIZING is still set): ours to initialize.
        let d = unsafe { &mut *device.as_ptr() };
        // SAFETY: its extension is `size_of::<Extension>()` bytes of zeroed nonpaged pool,
        // suitably aligned, not shared with anyone yet.
        let ext = unsafe { &mut *d.DeviceExtension.cast::<Extension>() };
        ext.magic = EXTENSION_MAGIC;
        ext.volume = Arc::into_raw(Arc::clone(&mounted));
        // SAFETY: the lock lives in the extension, which never moves; 0/0 = no limits.
        unsafe { IoInitializeRemoveLockEx(&mut ext.lock, DRIVER_TAG, 0, 0, REMLOCK_SIZE) };
        d.Flags |= DO_DIRECT_IO;
        d.SectorSize = sector_size as u16;
        let this = VolumeDevice { device, mounted };
        // W4: raw opens for system, administrators and the mounting user, set before the
        // device can be opened; on failure Drop deletes the device.
        // SAFETY: the device created above, not deleted.
        if let Err(status) = unsafe {
            super::identity::protect(
                device.as_ptr(),
                super::identity::DeviceAccess::Volume { owner },
            )
        } {
            drop(this);
            return Err(status);
        }
        d.Flags &= !DO_DEVICE_INITIALIZING;
        let links: [Option<Vec<u16>>; 2] = [
            Some(this.mounted.link_name.clone()),
            this.mounted.letter_link.clone(),
        ];
        for link in links {
            let Some(link) = link else { continue };
            let mut l = link;
            let mut n = this.mounted.device_name.clone();
            let (mut l, mut n) = (unicode(&mut l), unicode(&mut n));
            // SAFETY: both names are valid for the call.
            let status = unsafe { IoCreateSymbolicLink(&mut l, &mut n) };
            if status < 0 {
                // Drop removes the links made so far and deletes the device; the caller
                // still owns the (not yet dismounted) volume's other reference.
                drop(this);
                return Err(Status::from_ntstatus(status as u32));
            }
        }
        Ok(this)
    }

    /// The mounted volume.
    pub fn mounted(&self) -> &Arc<MountedVolume> {
        &self.mounted
    }

    fn delete_device(&self) {
        let ext = extension(self.device.as_ptr());
        if let Some(ext) = ext {
            // Acquire, then release-and-wait, as the remove lock protocol requires; afterwards
            // every acquisition fails (STATUS_DELETE_PENDING).
            if acquire(ext, core::ptr::null_mut()) {
                let lock = lock_of(ext);
                // SAFETY: we hold one acquisition with tag NULL (taken just above).
                unsafe { IoReleaseRemoveLockAndWaitEx(lock, core::ptr::null_mut(), REMLOCK_SIZE) };
            }
            // SAFETY: a live extension; taking a field's address touches nothing.
            let field = unsafe { &raw mut (*ext).volume };
            // SAFETY: no dispatch holds the lock any more and none can take it, so nobody
            // reads `volume`; reclaim the reference given to the extension.
            let raw = unsafe { core::ptr::replace(field, core::ptr::null()) };
            if !raw.is_null() {
                // SAFETY: `raw` came from Arc::into_raw in `create`, reclaimed once.
                drop(unsafe { Arc::from_raw(raw) });
            }
        }
        // SAFETY: our device; open handles keep the object (not the volume) alive, and its
        // dispatch fails from now on (remove lock released).
        unsafe { IoDeleteDevice(self.device.as_ptr()) };
    }
}

impl Drop for VolumeDevice {
    /// Removes the links, dismounts the volume (which waits for every request and child
    /// request: R13), stops new dispatches, waits for the ones running and deletes the device.
    ///
    /// IRQL: PASSIVE_LEVEL.
    fn drop(&mut self) {
        delete_link(&self.mounted.link_name);
        if let Some(l) = &self.mounted.letter_link {
            delete_link(l);
        }
        self.mounted.volume.dismount();
        self.delete_device();
    }
}

fn delete_link(link: &[u16]) {
    let mut l = link.to_vec();
    let mut l = unicode(&mut l);
    // SAFETY: the name is valid for the call; a missing link just fails.
    let _ = unsafe { IoDeleteSymbolicLink(&mut l) };
}

fn volume_sector(volume: &Volume<KernelPlatform>) -> u32 {
    // The sector size the volume presents (validated at mount: a power of two >= 512).
    volume.params.sector_size
}

/// The remove lock inside `ext` (a live extension).
fn lock_of(ext: *mut Extension) -> *mut IO_REMOVE_LOCK {
    // SAFETY: `ext` is a live extension of one of our devices (callers); taking a field's
    // address reads and writes nothing.
    unsafe { &raw mut (*ext).lock }
}

/// Takes the remove lock of `ext` with `tag`; false once removal began.
fn acquire(ext: *mut Extension, tag: wdk_sys::PVOID) -> bool {
    let lock = lock_of(ext);
    // SAFETY: an initialized remove lock; the file/line arguments may be NULL/0.
    let status = unsafe { IoAcquireRemoveLockEx(lock, tag, core::ptr::null(), 0, REMLOCK_SIZE) };
    status >= 0
}

/// Releases the acquisition taken with `tag`.
fn release(ext: *mut Extension, tag: wdk_sys::PVOID) {
    let lock = lock_of(ext);
    // SAFETY: the caller holds an acquisition taken with `tag`.
    unsafe { IoReleaseRemoveLockEx(lock, tag, REMLOCK_SIZE) };
}

/// The volume extension of `device`, or `None` for the control device.
fn extension(device: *mut DEVICE_OBJECT) -> Option<*mut Extension> {
    // SAFETY: `device` is a device object of this driver passed by the I/O manager.
    let ext = unsafe { (*device).DeviceExtension }.cast::<Extension>();
    if ext.is_null() {
        return None;
    }
    // SAFETY: a non-null extension of our devices is an `Extension` (only volume devices
    // have one); reading its first field is valid.
    (unsafe { (*ext).magic } == EXTENSION_MAGIC).then_some(ext)
}

/// True when `device` is a volume device (the control module dispatches to [`dispatch`]).
pub(crate) fn is_volume_device(device: *mut DEVICE_OBJECT) -> bool {
    extension(device).is_some()
}

/// Dispatch routine for every major function on a volume device.
///
/// # Safety
/// Called by the I/O manager with one of our volume devices and an IRP for it.
pub(crate) unsafe fn dispatch(device: *mut DEVICE_OBJECT, irp: *mut IRP) -> NTSTATUS {
    let Some(irp_ptr) = NonNull::new(irp) else {
        return nt(Status::InvalidParameter);
    };
    // SAFETY: the IRP is ours until completed (contract).
    let mut request = unsafe { Irp::from_raw(irp_ptr) };
    let Some(ext) = extension(device) else {
        request.complete(Status::InvalidDeviceRequest, 0);
        return nt(Status::InvalidDeviceRequest);
    };
    // The tag is the IRP, released with the same tag below.
    if !acquire(ext, irp.cast()) {
        request.complete(nts::DELETE_PENDING, 0);
        return nt(nts::DELETE_PENDING);
    }
    // SAFETY: while we hold the remove lock, `volume` is the live reference set by `create`
    // (dismount clears it only after release-and-wait).
    let mounted = unsafe { (*ext).volume };
    // SAFETY: as above: a live `MountedVolume` for as long as we hold the lock.
    let mounted = unsafe { &*mounted };
    let status = match u32::from(request.major_function()) {
        IRP_MJ_READ | IRP_MJ_WRITE | IRP_MJ_FLUSH_BUFFERS => {
            request.mark_pending();
            // While the engine queues it, IoCancelIrp reaches `cancel_queued`.
            request.set_cancel_routine(cancel_queued);
            // The engine completes it exactly once (a read or write without MDL reaches it as
            // a request without buffer and fails cleanly: R14).
            mounted.volume.dispatch(request);
            nts::PENDING as NTSTATUS
        }
        IRP_MJ_CREATE => {
            mounted.open_handles.fetch_add(1, Ordering::AcqRel);
            request.complete(Status::Success, 0);
            nt(Status::Success)
        }
        IRP_MJ_CLOSE => {
            let _ = mounted
                .open_handles
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
            request.complete(Status::Success, 0);
            nt(Status::Success)
        }
        IRP_MJ_CLEANUP => {
            request.complete(Status::Success, 0);
            nt(Status::Success)
        }
        IRP_MJ_DEVICE_CONTROL => {
            let (status, info) = disk_control(mounted, &mut request);
            request.complete(status, info);
            nt(status)
        }
        _ => {
            request.complete(Status::InvalidDeviceRequest, 0);
            nt(Status::InvalidDeviceRequest)
        }
    };
    release(ext, irp.cast());
    status
}

/// The cancel routine of a read, write or flush IRP while the engine queues it (DRIVER_CANCEL):
/// a request still waiting completes with STATUS_CANCELLED, nothing issued (`Volume::cancel`).
///
/// IRQL: called at DISPATCH_LEVEL with the cancel spin lock held; runs the engine at the
/// IRQL of IoCancelIrp's caller (<= DISPATCH_LEVEL), where it only takes spin locks.
///
/// # Safety
/// Called by IoCancelIrp for an IRP whose routine `Irp::arm_cancel` installed on one of our
/// volume devices.
unsafe extern "C" fn cancel_queued(device: *mut DEVICE_OBJECT, irp: *mut IRP) {
    // SAFETY: IoCancelIrp passes the IRP it is cancelling; the engine still owns it.
    let irql = unsafe { (*irp).CancelIrql };
    // SAFETY: IoCancelIrp holds the cancel spin lock and stored the IRQL to return to in the
    // IRP; a cancel routine releases it first.
    unsafe { IoReleaseCancelSpinLock(irql) };
    let Some(ext) = extension(device) else {
        return;
    };
    // The engine still owns the IRP (its routine was installed and never taken back), so the
    // volume is mounted and dismount waits for the request: the remove lock is not released
    // for deletion yet. Holding it for this call keeps the volume while the engine completes
    // the IRP (possibly on another thread) and dismount proceeds.
    let tag = cancel_queued as *mut core::ffi::c_void;
    if !acquire(ext, tag) {
        return; // unreachable: no request of a volume outlives its dismount
    }
    // SAFETY: as in `dispatch`: `volume` is the live reference `create` set while we hold
    // the remove lock.
    let mounted = unsafe { (*ext).volume };
    // SAFETY: as above: a live `MountedVolume` for as long as we hold the lock.
    let mounted = unsafe { &*mounted };
    mounted.volume.cancel(irp as usize);
    release(ext, tag);
}

/// A reply writer over the METHOD_BUFFERED system buffer, bounded by the output length.
struct Out<'a> {
    buf: &'a mut [u8],
}

impl Out<'_> {
    fn u8(&mut self, at: usize, v: u8) {
        self.buf[at] = v;
    }
    fn u16(&mut self, at: usize, v: u16) {
        self.buf[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, at: usize, v: u32) {
        self.buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, at: usize, v: u64) {
        self.buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
}

/// Serves one disk IOCTL; returns the status and the bytes written to the output.
fn disk_control(mounted: &MountedVolume, request: &mut Irp) -> (Status, usize) {
    let (code_, input_len, output_len) = request.ioctl_parameters();
    let (input_len, output_len) = (input_len as usize, output_len as usize);
    let size = mounted.volume.size();
    let sector = mounted.sector_size;
    let read_only = mounted.read_only;
    let needs_buffer = !matches!(
        code_,
        code::DISK_IS_WRITABLE
            | code::DISK_CHECK_VERIFY
            | code::STORAGE_CHECK_VERIFY
            | code::STORAGE_CHECK_VERIFY2
    );
    let mut empty = [0u8; 0];
    let buf: &mut [u8] = match request.system_buffer() {
        Some(b) => b,
        None if !needs_buffer => &mut empty,
        None => return (nts::BUFFER_TOO_SMALL, 0),
    };
    let input: Vec<u8> = buf[..input_len.min(buf.len())].to_vec();
    let out_len = output_len.min(buf.len());
    let mut out = Out {
        buf: &mut buf[..out_len],
    };
    let need = |n: usize| out_len >= n;
    match code_ {
        code::DISK_GET_LENGTH_INFO => {
            if !need(8) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            out.u64(0, size);
            (Status::Success, 8)
        }
        code::DISK_GET_DRIVE_GEOMETRY | code::DISK_GET_DRIVE_GEOMETRY_EX => {
            let ex = code_ == code::DISK_GET_DRIVE_GEOMETRY_EX;
            let n = if ex { 32 } else { 24 };
            if !need(n) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            // One track of one sector per cylinder: exact for any size.
            out.u64(0, size / u64::from(sector)); // Cylinders
            out.u32(8, 12); // MediaType = FixedMedia
            out.u32(12, 1); // TracksPerCylinder
            out.u32(16, 1); // SectorsPerTrack
            out.u32(20, sector); // BytesPerSector
            if ex {
                out.u64(24, size); // DiskSize
            }
            (Status::Success, n)
        }
        code::DISK_GET_PARTITION_INFO => {
            if !need(32) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            out.buf[..32].fill(0);
            out.u64(0, 0); // StartingOffset
            out.u64(8, size); // PartitionLength
            out.u32(20, 1); // PartitionNumber
            out.u8(24, 0x07); // PartitionType: IFS (NTFS/exFAT)
            out.u8(26, 1); // RecognizedPartition
            (Status::Success, 32)
        }
        code::DISK_GET_PARTITION_INFO_EX => {
            if !need(144) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            out.buf[..144].fill(0);
            out.u32(0, 0); // PartitionStyle MBR
            out.u64(8, 0); // StartingOffset
            out.u64(16, size); // PartitionLength
            out.u32(24, 1); // PartitionNumber
            out.u8(32, 0x07); // Mbr.PartitionType
            out.u8(34, 1); // Mbr.RecognizedPartition
            (Status::Success, 144)
        }
        code::DISK_IS_WRITABLE => {
            if read_only {
                (Status::MediaWriteProtected, 0)
            } else {
                (Status::Success, 0)
            }
        }
        code::DISK_VERIFY => {
            // VERIFY_INFORMATION: StartingOffset i64, Length u32.
            if input.len() < 12 {
                return (Status::InvalidParameter, 0);
            }
            let start = i64::from_le_bytes(input[0..8].try_into().unwrap_or([0xff; 8]));
            let length = u32::from_le_bytes(input[8..12].try_into().unwrap_or([0xff; 4]));
            let fits = u64::try_from(start)
                .ok()
                .and_then(|s| s.checked_add(u64::from(length)))
                .is_some_and(|end| end <= size);
            if fits {
                (Status::Success, 0)
            } else {
                (Status::InvalidParameter, 0)
            }
        }
        code::DISK_CHECK_VERIFY | code::STORAGE_CHECK_VERIFY | code::STORAGE_CHECK_VERIFY2 => {
            if need(4) {
                out.u32(0, 0); // media change count
                (Status::Success, 4)
            } else {
                (Status::Success, 0)
            }
        }
        code::DISK_GET_DISK_ATTRIBUTES => {
            if !need(16) {
                return (nts::BUFFER_TOO_SMALL, 0);
            }
            out.buf[..16].fill(0);
            out.u32(0, 16); // Version = sizeof(GET_DISK_ATTRIBUTES)
            out.u64(8, if read_only { 2 } else { 0 }); // DISK_ATTRIBUTE_READ_ONLY
            (Status::Success, 16)
        }
        code::STORAGE_QUERY_PROPERTY => storage_query(&input, &mut out, sector),
        code::MOUNTDEV_QUERY_DEVICE_NAME => counted_name(&mut out, 0, &mounted.device_name, 4),
        code::MOUNTDEV_QUERY_UNIQUE_ID => {
            // A stable id: the device name's bytes.
            counted_name(&mut out, 0, &mounted.device_name, 4)
        }
        code::MOUNTDEV_QUERY_SUGGESTED_LINK_NAME => match &mounted.letter_link {
            None => (nts::NOT_FOUND, 0),
            Some(link) => {
                if !need(6) {
                    return (nts::BUFFER_TOO_SMALL, 0);
                }
                out.u8(0, 0); // UseOnlyIfThereAreNoOtherLinks
                counted_name(&mut out, 2, link, 6)
            }
        },
        _ => (Status::InvalidDeviceRequest, 0),
    }
}

/// A `USHORT length; WCHAR name[]` reply at `at` (the mount manager's protocol: when the
/// name does not fit, the length alone with STATUS_BUFFER_OVERFLOW).
fn counted_name(out: &mut Out<'_>, at: usize, name: &[u16], header: usize) -> (Status, usize) {
    let len = out.buf.len();
    if len < header {
        return (nts::BUFFER_TOO_SMALL, 0);
    }
    let bytes = name.len() * 2;
    out.u16(at, bytes as u16);
    if len < at + 2 + bytes {
        return (nts::BUFFER_OVERFLOW, header);
    }
    for (i, c) in name.iter().enumerate() {
        out.u16(at + 2 + 2 * i, *c);
    }
    (Status::Success, at + 2 + bytes)
}

/// IOCTL_STORAGE_QUERY_PROPERTY: device, adapter and access-alignment descriptors.
fn storage_query(input: &[u8], out: &mut Out<'_>, sector: u32) -> (Status, usize) {
    if input.len() < 8 {
        return (Status::InvalidParameter, 0);
    }
    let property = u32::from_le_bytes([input[0], input[1], input[2], input[3]]);
    let query = u32::from_le_bytes([input[4], input[5], input[6], input[7]]);
    let size = match property {
        0 => 40, // StorageDeviceProperty
        1 => 32, // StorageAdapterProperty
        6 => 28, // StorageAccessAlignmentProperty
        _ => return (nts::NOT_SUPPORTED, 0),
    };
    match query {
        0 => {}
        1 => return (Status::Success, 0), // PropertyExistsQuery
        _ => return (Status::InvalidParameter, 0),
    }
    let len = out.buf.len();
    if len < 8 {
        return (nts::BUFFER_TOO_SMALL, 0);
    }
    // STORAGE_DESCRIPTOR_HEADER first, so a short buffer learns the size it needs.
    out.buf[..len.min(size)].fill(0);
    out.u32(0, size as u32);
    out.u32(4, size as u32);
    if len < size {
        return (Status::Success, 8);
    }
    match property {
        0 => {
            out.u8(8, 0); // DeviceType: direct-access device
            out.u32(28, 0x0E); // BusType: BusTypeVirtual
        }
        1 => {
            out.u32(8, 1024 * 1024); // MaximumTransferLength
            out.u32(12, 257); // MaximumPhysicalPages
            out.u32(16, 0); // AlignmentMask
            out.u8(24, 0x0E); // BusType: BusTypeVirtual
        }
        _ => {
            out.u32(8, 64); // BytesPerCacheLine
            out.u32(16, sector); // BytesPerLogicalSector
            out.u32(20, sector); // BytesPerPhysicalSector
        }
    }
    (Status::Success, size)
}
