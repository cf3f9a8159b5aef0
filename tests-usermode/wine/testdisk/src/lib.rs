//! vctestdisk.sys: a test-only WDM disk driver that plays the raw partition under a volume
//! mounted by vcdirect in the Wine end-to-end test (scripts/wine-e2e.sh).
//!
//! Owns: `\Device\VcTestDisk0` (FILE_DEVICE_DISK, DO_DIRECT_IO, a test-only symbolic link
//! `\\.\VcTestDisk0`) backed by a file named in the service key, and the control device
//! `\Device\VcTestDiskCtl` (`\\.\VcTestDiskCtl`: faults, latency, counters; the codes are in
//! `vctestdisk-abi`). Reads, writes and flushes are pended, queued, and completed later by one
//! system thread, which does the file I/O (synchronous ZwReadFile/ZwWriteFile: they deadlock
//! when called inline from a dispatch routine under Wine). Each round the thread takes the
//! requests queued so far, sleeps the configured latency once, then serves them in order, so
//! many requests are in flight at once and each waits between one and two latencies.
//! Requests that break the configured limits (maximum transfer length, physical pages, buffer
//! alignment, sector alignment) are refused with STATUS_INVALID_PARAMETER and counted, so a
//! test can prove the driver above honours them.
//! Never: shipped, or used outside tests. Under Wine the buffer comes from the MDL's
//! `MappedSystemVa` (Wine's MmMapLockedPages* return NULL); on Windows it is mapped.
#![no_std]

use core::cell::UnsafeCell;
use core::mem::size_of;
use core::ptr::{null_mut, NonNull};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use vctestdisk_abi::{
    self as td, counter, Fault, COUNTERS, DEFAULT_MAX_TRANSFER, FAULT_READ, FAULT_WRITE,
    IOCTL_CLEAR_FAULTS, IOCTL_COUNTERS, IOCTL_RESET_COUNTERS, IOCTL_SET_FAULT, IOCTL_SET_LATENCY,
    IOCTL_SET_DEVICE_TYPE, IOCTL_SET_WRITE_PROTECTED, MAX_FAULTS, PAGE, SECTOR,
};
use wdk_sys::ntddk::{
    DbgPrint, IoCreateDevice, IoCreateSymbolicLink, IoDeleteDevice, IoDeleteSymbolicLink,
    IofCompleteRequest, KeAcquireSpinLockRaiseToDpc, KeDelayExecutionThread, KeInitializeEvent,
    KeReleaseSpinLock, KeSetEvent, KeWaitForSingleObject, MmMapLockedPagesSpecifyCache,
    ObReferenceObjectByHandle, ObfDereferenceObject, PsCreateSystemThread, ZwClose, ZwCreateFile,
    ZwOpenKey, ZwQueryInformationFile, ZwQueryValueKey, ZwReadFile, ZwWriteFile,
};
use wdk_sys::{
    DEVICE_OBJECT, DRIVER_OBJECT, FILE_STANDARD_INFORMATION, HANDLE, IO_STACK_LOCATION,
    IO_STATUS_BLOCK, IRP, KEVENT, KSPIN_LOCK, LARGE_INTEGER, NTSTATUS, OBJECT_ATTRIBUTES,
    PCUNICODE_STRING, PVOID, UNICODE_STRING,
};

// ---------------------------------------------------------------------------------------------
// Constants (documented values from the WDK headers that the mingw-derived bindings lack or
// make awkward to use).

const STATUS_SUCCESS: NTSTATUS = 0;
const STATUS_PENDING: NTSTATUS = 0x0000_0103;
const STATUS_INVALID_PARAMETER: NTSTATUS = 0xC000_000Du32 as i32;
const STATUS_INVALID_DEVICE_REQUEST: NTSTATUS = 0xC000_0010u32 as i32;
const STATUS_BUFFER_TOO_SMALL: NTSTATUS = 0xC000_0023u32 as i32;
const STATUS_NOT_SUPPORTED: NTSTATUS = 0xC000_00BBu32 as i32;
const STATUS_DEVICE_BUSY: NTSTATUS = 0x8000_0011u32 as i32;
const STATUS_INSUFFICIENT_RESOURCES: NTSTATUS = 0xC000_009Au32 as i32;
const STATUS_END_OF_FILE: NTSTATUS = 0xC000_0011u32 as i32;
const STATUS_MEDIA_WRITE_PROTECTED: NTSTATUS = 0xC000_00A2u32 as i32;

const IRP_MJ_CREATE: usize = 0x00;
const IRP_MJ_CLOSE: usize = 0x02;
const IRP_MJ_READ: usize = 0x03;
const IRP_MJ_WRITE: usize = 0x04;
const IRP_MJ_FLUSH_BUFFERS: usize = 0x09;
const IRP_MJ_DEVICE_CONTROL: usize = 0x0e;
const IRP_MJ_CLEANUP: usize = 0x12;

const FILE_DEVICE_DISK: u32 = 0x07;
const FILE_DEVICE_UNKNOWN: u32 = 0x22;
const DO_BUFFERED_IO: u32 = 0x04;
const DO_DIRECT_IO: u32 = 0x10;
const DO_DEVICE_INITIALIZING: u32 = 0x80;
const SL_PENDING_RETURNED: u8 = 0x01;
const MDL_MAPPED_TO_SYSTEM_VA: i16 = 0x0001;
const MDL_SOURCE_IS_NONPAGED_POOL: i16 = 0x0004;
const MDL_PARTIAL: i16 = 0x0010;
const IRP_NOCACHE: u32 = 0x01;
const IRP_PAGING_IO: u32 = 0x02;

const OBJ_CASE_INSENSITIVE: u32 = 0x40;
const OBJ_KERNEL_HANDLE: u32 = 0x200;
const KEY_READ: u32 = 0x20019;
const GENERIC_READ: u32 = 0x8000_0000;
const GENERIC_WRITE: u32 = 0x4000_0000;
const SYNCHRONIZE: u32 = 0x0010_0000;
const THREAD_ALL_ACCESS: u32 = 0x001F_FFFF;
const FILE_SHARE_READ: u32 = 1;
const FILE_OPEN: u32 = 1;
const FILE_NON_DIRECTORY_FILE: u32 = 0x40;
const FILE_SYNCHRONOUS_IO_NONALERT: u32 = 0x20;
const FILE_WRITE_THROUGH: u32 = 0x02;
const FILE_ATTRIBUTE_NORMAL: u32 = 0x80;
const FILE_STANDARD_INFORMATION_CLASS: i32 = 5;
const KEY_VALUE_PARTIAL_INFORMATION_CLASS: i32 = 2;
const REG_SZ: u32 = 1;
const REG_EXPAND_SZ: u32 = 2;
const REG_DWORD: u32 = 4;
const SYNCHRONIZATION_EVENT: i32 = 1;

const IOCTL_DISK_GET_DRIVE_GEOMETRY: u32 = 0x0007_0000;
const IOCTL_DISK_IS_WRITABLE: u32 = 0x0007_0024;
const IOCTL_DISK_GET_LENGTH_INFO: u32 = 0x0007_405C;
const IOCTL_STORAGE_QUERY_PROPERTY: u32 = 0x002D_1400;
const STORAGE_DEVICE_PROPERTY: u32 = 0;
const STORAGE_ADAPTER_PROPERTY: u32 = 1;
const PROPERTY_STANDARD_QUERY: u32 = 0;
const PROPERTY_EXISTS_QUERY: u32 = 1;
/// STORAGE_ADAPTER_DESCRIPTOR's size (Version and Size carry it).
const ADAPTER_DESCRIPTOR_SIZE: usize = 32;
/// BusTypeFileBackedVirtual.
const BUS_TYPE_FILE_BACKED_VIRTUAL: u8 = 0x0F;

/// Device extension tags: both devices share the dispatch routines.
const TAG_DISK: u32 = 0x4b53_4944; // "DISK"
const TAG_CONTROL: u32 = 0x4c52_5443; // "CTRL"

/// Requests the queue holds at once; more are refused with STATUS_DEVICE_BUSY (and counted).
const RING: usize = 256;

// ---------------------------------------------------------------------------------------------
// Small helpers.

/// A NUL-terminated UTF-16 copy of an ASCII string, made at compile time.
const fn ascii_utf16<const N: usize>(s: &str) -> [u16; N] {
    let bytes = s.as_bytes();
    let mut out = [0u16; N];
    let mut i = 0;
    while i < bytes.len() {
        out[i] = bytes[i] as u16;
        i += 1;
    }
    out
}

/// `wide!("text")`: a `&'static [u16]` with a NUL terminator.
macro_rules! wide {
    ($s:expr) => {{
        const S: &str = $s;
        const W: [u16; S.len() + 1] = ascii_utf16::<{ S.len() + 1 }>(S);
        &W
    }};
}

/// A UNICODE_STRING over a NUL-terminated static UTF-16 string (the terminator not counted).
fn unicode(s: &'static [u16]) -> UNICODE_STRING {
    let bytes = ((s.len() - 1) * 2) as u16;
    UNICODE_STRING {
        Length: bytes,
        MaximumLength: bytes,
        // The kernel never writes through the name arguments we pass this to.
        Buffer: s.as_ptr().cast_mut(),
    }
}

fn disk_name() -> UNICODE_STRING {
    unicode(wide!(r"\Device\VcTestDisk0"))
}
fn disk_link() -> UNICODE_STRING {
    unicode(wide!(r"\DosDevices\VcTestDisk0"))
}
fn control_name() -> UNICODE_STRING {
    unicode(wide!(r"\Device\VcTestDiskCtl"))
}
fn control_link() -> UNICODE_STRING {
    unicode(wide!(r"\DosDevices\VcTestDiskCtl"))
}

fn attributes(name: *mut UNICODE_STRING) -> OBJECT_ATTRIBUTES {
    OBJECT_ATTRIBUTES {
        Length: size_of::<OBJECT_ATTRIBUTES>() as u32,
        RootDirectory: null_mut(),
        ObjectName: name,
        Attributes: OBJ_CASE_INSENSITIVE | OBJ_KERNEL_HANDLE,
        SecurityDescriptor: null_mut(),
        SecurityQualityOfService: null_mut(),
    }
}

fn nt_success(status: NTSTATUS) -> bool {
    status >= 0
}

fn large(value: i64) -> LARGE_INTEGER {
    LARGE_INTEGER { QuadPart: value }
}

fn zero_iosb() -> IO_STATUS_BLOCK {
    // SAFETY: IO_STATUS_BLOCK is plain integers and a pointer union; all zeros is valid.
    unsafe { core::mem::zeroed() }
}

/// `DbgPrint` with a C format string and up to three integer arguments.
macro_rules! say {
    ($fmt:expr $(, $arg:expr)*) => {
        // SAFETY: the format is a NUL-terminated literal whose conversions match the arguments
        // (each is a u32 or u64 passed as the format says).
        unsafe { DbgPrint(concat!("vctestdisk: ", $fmt, "\n\0").as_ptr().cast() $(, $arg)*) }
    };
}

// ---------------------------------------------------------------------------------------------
// A spin lock over data, and the queue.

/// Data guarded by a KSPIN_LOCK (acquired with KeAcquireSpinLockRaiseToDpc, so the closure
/// runs at DISPATCH_LEVEL: it must not wait, page or call anything that does).
#[repr(C)]
struct SpinLocked<T> {
    lock: UnsafeCell<KSPIN_LOCK>,
    data: UnsafeCell<T>,
}

impl<T> SpinLocked<T> {
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: the lock lives in the device extension (nonpaged, zero = initialized) for as
        // long as `self` does.
        let irql = unsafe { KeAcquireSpinLockRaiseToDpc(self.lock.get()) };
        // SAFETY: holding the lock gives exclusive access to `data`.
        let result = f(unsafe { &mut *self.data.get() });
        // SAFETY: releases the lock acquired above, restoring the IRQL it returned.
        unsafe { KeReleaseSpinLock(self.lock.get(), irql) };
        result
    }
}

/// The queue of pended IRPs (a ring; all zeros is empty) and the active faults.
#[repr(C)]
struct Shared {
    ring: [*mut IRP; RING],
    head: usize,
    len: usize,
    faults: [Fault; MAX_FAULTS],
    fault_count: usize,
}

/// The disk device's extension. All zeros is a valid initial value (IoCreateDevice zeroes it,
/// and `create_devices` clears it again before use).
#[repr(C)]
struct Disk {
    tag: u32,
    /// The disk's own device object (its DeviceType is what IOCTL_SET_DEVICE_TYPE changes).
    device: *mut DEVICE_OBJECT,
    shared: SpinLocked<Shared>,
    /// Synchronization event: set when a request is queued or when stopping.
    wake: UnsafeCell<KEVENT>,
    stop: AtomicBool,
    /// Referenced thread object of the worker (null if none).
    thread: UnsafeCell<PVOID>,
    /// Kernel handle of the backing file.
    file: UnsafeCell<HANDLE>,
    bytes: AtomicU64,
    latency_us: AtomicU32,
    /// Write-protected (IOCTL_SET_WRITE_PROTECTED); off at load (the extension is zeroed).
    write_protected: AtomicBool,
    max_transfer: AtomicU32,
    max_pages: AtomicU32,
    alignment_mask: AtomicU32,
    counters: [AtomicU64; COUNTERS],
}

/// The control device's extension.
#[repr(C)]
struct Control {
    tag: u32,
    disk: *const Disk,
}

impl Disk {
    fn count(&self, which: usize, by: u64) {
        self.counters[which].fetch_add(by, Ordering::Relaxed);
    }

    fn wake(&self) {
        // SAFETY: the event was initialized by `create_devices` and lives in the extension.
        unsafe { KeSetEvent(self.wake.get(), 0, 0) };
    }

    /// Queues a pended IRP; gives it back if the ring is full.
    fn push(&self, irp: *mut IRP) -> Result<(), *mut IRP> {
        let queued = self.shared.with(|s| {
            if s.len == RING {
                return false;
            }
            let slot = (s.head + s.len) % RING;
            s.ring[slot] = irp;
            s.len += 1;
            true
        });
        if !queued {
            return Err(irp);
        }
        self.wake();
        Ok(())
    }

    fn pop(&self) -> Option<*mut IRP> {
        self.shared.with(|s| {
            if s.len == 0 {
                return None;
            }
            let irp = s.ring[s.head];
            s.head = (s.head + 1) % RING;
            s.len -= 1;
            Some(irp)
        })
    }

    fn queued(&self) -> usize {
        self.shared.with(|s| s.len)
    }

    fn fault_for(&self, op: u32, offset: u64, length: u64) -> Option<NTSTATUS> {
        self.shared.with(|s| {
            s.faults[..s.fault_count]
                .iter()
                .find(|f| f.hits(op, offset, length))
                .map(|f| f.status as i32)
        })
    }
}

// ---------------------------------------------------------------------------------------------
// IRP access.

/// The IRP's current stack location.
///
/// # Safety
/// `irp` is a live IRP owned by this driver (not completed).
unsafe fn stack<'a>(irp: *mut IRP) -> &'a mut IO_STACK_LOCATION {
    // SAFETY: per the contract, the IRP is live, so its current stack location pointer (set by
    // the I/O manager before calling the dispatch routine) is valid.
    unsafe {
        &mut *(*irp)
            .Tail
            .Overlay
            .__bindgen_anon_2
            .__bindgen_anon_1
            .CurrentStackLocation
    }
}

/// Completes `irp` with `status` and `information`; the IRP must not be touched afterwards.
///
/// # Safety
/// `irp` is a live IRP owned by this driver, completed exactly once.
unsafe fn complete(irp: *mut IRP, status: NTSTATUS, information: u64) -> NTSTATUS {
    // SAFETY: per the contract the IRP is live and ours until IofCompleteRequest.
    unsafe {
        (*irp).IoStatus.__bindgen_anon_1.Status = status;
        (*irp).IoStatus.Information = information;
    }
    // SAFETY: the IRP is ours and completed once, here.
    unsafe { IofCompleteRequest(irp, 0) };
    status
}

/// The system address of the IRP's MDL, or None without a usable buffer. Under Wine the MDL
/// is built by IoBuildAsynchronousFsdRequest with `MappedSystemVa` set; on Windows an
/// unmapped MDL is mapped here.
///
/// # Safety
/// `irp` is a live IRP owned by this driver.
unsafe fn system_address(irp: *mut IRP) -> Option<NonNull<u8>> {
    // SAFETY: the IRP is live (contract).
    let mdl = NonNull::new(unsafe { (*irp).MdlAddress })?;
    // SAFETY: the MDL belongs to the live IRP.
    let (flags, mapped) = unsafe { (mdl.as_ref().MdlFlags, mdl.as_ref().MappedSystemVa) };
    let address = if flags & (MDL_MAPPED_TO_SYSTEM_VA | MDL_SOURCE_IS_NONPAGED_POOL) != 0 {
        mapped
    } else {
        // SAFETY: an MDL of a direct-I/O request describes locked pages; mapping it for kernel
        // use is what MmGetSystemAddressForMdlSafe does (MmCached = 1, NormalPagePriority = 16).
        unsafe { MmMapLockedPagesSpecifyCache(mdl.as_ptr(), 0, 1, null_mut(), 0, 16) }
    };
    NonNull::new(address.cast::<u8>())
}

// ---------------------------------------------------------------------------------------------
// Registry.

/// Reads a value of the service key into `out` (KEY_VALUE_PARTIAL_INFORMATION layout:
/// TitleIndex, Type, DataLength, Data). Returns (type, data length).
///
/// # Safety
/// `key` is an open registry key handle.
unsafe fn query_value(key: HANDLE, name: &'static [u16], out: &mut [u8]) -> Option<(u32, usize)> {
    let mut name = unicode(name);
    let mut got = 0u32;
    // SAFETY: `key` is open (contract), `name` and `out` are valid for the call.
    let status = unsafe {
        ZwQueryValueKey(
            key,
            &mut name,
            KEY_VALUE_PARTIAL_INFORMATION_CLASS,
            out.as_mut_ptr().cast(),
            out.len() as u32,
            &mut got,
        )
    };
    if !nt_success(status) || (got as usize) < 12 {
        return None;
    }
    let ty = u32::from_le_bytes([out[4], out[5], out[6], out[7]]);
    let len = u32::from_le_bytes([out[8], out[9], out[10], out[11]]) as usize;
    (12 + len <= out.len()).then_some((ty, len))
}

/// A REG_DWORD value (exactly 4 bytes), or None.
///
/// # Safety
/// `key` is an open registry key handle.
unsafe fn query_dword(key: HANDLE, name: &'static [u16]) -> Option<u32> {
    let mut buf = [0u8; 16];
    // SAFETY: forwarded contract.
    match unsafe { query_value(key, name, &mut buf) }? {
        (REG_DWORD, 4) => Some(u32::from_le_bytes([buf[12], buf[13], buf[14], buf[15]])),
        _ => None,
    }
}

/// Settings read from the service key at load.
struct Config {
    latency_us: u32,
    max_transfer: u32,
    max_pages: u32,
    alignment_mask: u32,
}

/// Reads the settings and opens the backing file. Returns the file handle and its length.
///
/// # Safety
/// `registry_path` is the service key path DriverEntry received.
unsafe fn open_backing(registry_path: PCUNICODE_STRING) -> Result<(HANDLE, u64, Config), NTSTATUS> {
    let mut key: HANDLE = null_mut();
    let mut oa = attributes(registry_path.cast_mut());
    // SAFETY: `oa` names the service key; `key` receives the handle.
    let status = unsafe { ZwOpenKey(&mut key, KEY_READ, &mut oa) };
    if !nt_success(status) {
        say!("cannot open the service key (%#x)", status);
        return Err(status);
    }
    // SAFETY: `key` is open until the ZwClose below.
    let latency_us = unsafe { query_dword(key, wide!(td::REG_LATENCY_US)) }.unwrap_or(0);
    // SAFETY: as above.
    let max_transfer = unsafe { query_dword(key, wide!(td::REG_MAX_TRANSFER)) }
        .filter(|v| *v >= SECTOR && *v % SECTOR == 0)
        .unwrap_or(DEFAULT_MAX_TRANSFER);
    // SAFETY: as above.
    let max_pages = unsafe { query_dword(key, wide!(td::REG_MAX_PAGES)) }
        .filter(|v| *v > 0)
        .unwrap_or(max_transfer / PAGE as u32 + 1);
    // SAFETY: as above.
    let alignment_mask = unsafe { query_dword(key, wide!(td::REG_ALIGNMENT_MASK)) }.unwrap_or(0);
    // The backing file's NT path (\??\C:\...), REG_SZ or REG_EXPAND_SZ, up to 259 characters.
    let mut path = [0u8; 12 + 520];
    // SAFETY: as above.
    let found = unsafe { query_value(key, wide!(td::REG_BACKING_FILE), &mut path) };
    // SAFETY: `key` was opened above and is closed once.
    let _ = unsafe { ZwClose(key) };
    let Some((_, len)) =
        found.filter(|(ty, len)| matches!(*ty, REG_SZ | REG_EXPAND_SZ) && *len >= 4)
    else {
        say!("no BackingFile (REG_SZ) value in the service key");
        return Err(STATUS_INVALID_PARAMETER);
    };
    // Drop the terminator(s) from the length; the data is UTF-16LE in place at offset 12.
    let mut chars = len / 2;
    let wide_at = |i: usize| u16::from_le_bytes([path[12 + 2 * i], path[13 + 2 * i]]);
    while chars > 0 && wide_at(chars - 1) == 0 {
        chars -= 1;
    }
    // Copy into an aligned UTF-16 buffer for the UNICODE_STRING.
    let mut name_buf = [0u16; 260];
    for (i, slot) in name_buf.iter_mut().enumerate().take(chars) {
        *slot = wide_at(i);
    }
    let mut name = UNICODE_STRING {
        Length: (chars * 2) as u16,
        MaximumLength: (chars * 2) as u16,
        Buffer: name_buf.as_mut_ptr(),
    };
    let mut oa = attributes(&mut name);
    let mut file: HANDLE = null_mut();
    let mut iosb = zero_iosb();
    // SAFETY: every pointer is valid for the call; synchronous open of an existing file.
    let status = unsafe {
        ZwCreateFile(
            &mut file,
            GENERIC_READ | GENERIC_WRITE | SYNCHRONIZE,
            &mut oa,
            &mut iosb,
            null_mut(),
            FILE_ATTRIBUTE_NORMAL,
            FILE_SHARE_READ,
            FILE_OPEN,
            FILE_NON_DIRECTORY_FILE | FILE_SYNCHRONOUS_IO_NONALERT | FILE_WRITE_THROUGH,
            null_mut(),
            0,
        )
    };
    if !nt_success(status) {
        say!("cannot open the backing file (%#x)", status);
        return Err(status);
    }
    // SAFETY: all zeros is a valid FILE_STANDARD_INFORMATION (integers and booleans).
    let mut info: FILE_STANDARD_INFORMATION = unsafe { core::mem::zeroed() };
    // SAFETY: `file` is open; `info` is the size the class needs.
    let status = unsafe {
        ZwQueryInformationFile(
            file,
            &mut iosb,
            (&mut info as *mut FILE_STANDARD_INFORMATION).cast(),
            size_of::<FILE_STANDARD_INFORMATION>() as u32,
            FILE_STANDARD_INFORMATION_CLASS,
        )
    };
    // SAFETY: QuadPart is the whole 64-bit value of the union.
    let end = unsafe { info.EndOfFile.QuadPart };
    if !nt_success(status) || end < i64::from(SECTOR) {
        say!("cannot size the backing file (%#x)", status);
        // SAFETY: opened above, closed once.
        let _ = unsafe { ZwClose(file) };
        return Err(if nt_success(status) {
            STATUS_END_OF_FILE
        } else {
            status
        });
    }
    let bytes = end as u64 / u64::from(SECTOR) * u64::from(SECTOR);
    Ok((
        file,
        bytes,
        Config {
            latency_us,
            max_transfer,
            max_pages,
            alignment_mask,
        },
    ))
}

// ---------------------------------------------------------------------------------------------
// Entry, unload, worker.

/// The disk extension, found from the driver object's device list.
///
/// # Safety
/// `device` is one of this driver's device objects, not yet deleted.
unsafe fn disk_of<'a>(device: *mut DEVICE_OBJECT) -> Option<&'a Disk> {
    // SAFETY: our devices' extensions start with a u32 tag (both are repr(C)).
    let ext = unsafe { (*device).DeviceExtension };
    // SAFETY: the extension is at least 4 bytes (both extension types start with the tag).
    match unsafe { *(ext as *const u32) } {
        // SAFETY: a disk device's extension is a Disk.
        TAG_DISK => Some(unsafe { &*(ext as *const Disk) }),
        // SAFETY: a control device's extension is a Control whose `disk` outlives it.
        TAG_CONTROL => unsafe { (*(ext as *const Control)).disk.as_ref() },
        _ => None,
    }
}

/// The image's entry point.
///
/// # Safety
/// Called only by the I/O manager with its driver object and service key path.
#[no_mangle]
pub unsafe extern "system" fn DriverEntry(
    driver: *mut DRIVER_OBJECT,
    registry_path: PCUNICODE_STRING,
) -> NTSTATUS {
    // SAFETY: forwarded from the I/O manager.
    let (file, bytes, config) = match unsafe { open_backing(registry_path) } {
        Ok(v) => v,
        Err(status) => return status,
    };
    // SAFETY: `driver` is ours; `file` is open and handed over.
    let status = unsafe { create_devices(driver, file, bytes, &config) };
    if !nt_success(status) {
        // SAFETY: the file was opened above and nothing else holds it.
        let _ = unsafe { ZwClose(file) };
        return status;
    }
    say!(
        "loaded (%I64u bytes, latency %u us, max transfer %u, max pages %u)",
        bytes,
        config.latency_us,
        config.max_transfer,
        config.max_pages
    );
    // What a driver that looks this one up by name sees (vcdirect's Wine build checks both).
    // SAFETY: our driver object, set up by create_devices.
    let (ty, first) = unsafe { ((*driver).Type, (*driver).DeviceObject) };
    // SAFETY: `first` is our device (or null, which the comparison handles without reading).
    let first_is_disk =
        !first.is_null() && unsafe { *((*first).DeviceExtension as *const u32) } == TAG_DISK;
    say!(
        "driver object Type %d, first device is the disk: %d",
        i32::from(ty),
        i32::from(first_is_disk)
    );
    STATUS_SUCCESS
}

/// Creates both devices, their links and the worker; sets the dispatch table.
///
/// # Safety
/// `driver` is this driver's object during DriverEntry; `file` is an open kernel handle.
unsafe fn create_devices(
    driver: *mut DRIVER_OBJECT,
    file: HANDLE,
    bytes: u64,
    config: &Config,
) -> NTSTATUS {
    // The control device first: IoCreateDevice puts each new device at the head of the
    // driver's list, and vcdirect's Wine build takes `\Driver\vctestdisk`'s first device as
    // its host, which must be the disk.
    let mut control_device: *mut DEVICE_OBJECT = null_mut();
    let mut cname = control_name();
    // SAFETY: valid driver object and name; the extension is sized for a Control.
    let status = unsafe {
        IoCreateDevice(
            driver,
            size_of::<Control>() as u32,
            &mut cname,
            FILE_DEVICE_UNKNOWN,
            0,
            0,
            &mut control_device,
        )
    };
    if !nt_success(status) {
        return status;
    }
    // SAFETY: the control extension is ours and sized for a Control; `disk` is set below,
    // before any link makes the device reachable.
    let control = unsafe {
        let ext = (*control_device).DeviceExtension as *mut Control;
        ext.write(Control {
            tag: TAG_CONTROL,
            disk: null_mut(),
        });
        ext
    };

    let mut disk_device: *mut DEVICE_OBJECT = null_mut();
    let mut name = disk_name();
    // SAFETY: valid driver object and name; the extension is sized for a Disk.
    let status = unsafe {
        IoCreateDevice(
            driver,
            size_of::<Disk>() as u32,
            &mut name,
            FILE_DEVICE_DISK,
            0,
            0,
            &mut disk_device,
        )
    };
    if !nt_success(status) {
        // SAFETY: created above, no links or threads yet.
        unsafe { IoDeleteDevice(control_device) };
        return status;
    }
    // SAFETY: the new device's extension is ours, nonpaged, sized for a Disk; all zeros is a
    // valid Disk, so clearing it and then setting fields through a shared reference is sound.
    let disk = unsafe {
        let ext = (*disk_device).DeviceExtension as *mut Disk;
        core::ptr::write_bytes(ext.cast::<u8>(), 0, size_of::<Disk>());
        (*ext).tag = TAG_DISK;
        (*ext).device = disk_device;
        *(*ext).file.get() = file;
        KeInitializeEvent((*ext).wake.get(), SYNCHRONIZATION_EVENT, 0);
        &*ext
    };
    disk.bytes.store(bytes, Ordering::Relaxed);
    disk.latency_us.store(config.latency_us, Ordering::Relaxed);
    disk.max_transfer
        .store(config.max_transfer, Ordering::Relaxed);
    disk.max_pages.store(config.max_pages, Ordering::Relaxed);
    disk.alignment_mask
        .store(config.alignment_mask, Ordering::Relaxed);

    // SAFETY: the control extension written above; nothing reaches it yet.
    unsafe { (*control).disk = disk };

    let mut thread: HANDLE = null_mut();
    // SAFETY: the worker gets the disk extension, which outlives it (unload joins it before
    // deleting the device).
    let status = unsafe {
        PsCreateSystemThread(
            &mut thread,
            THREAD_ALL_ACCESS,
            null_mut(),
            null_mut(),
            null_mut(),
            Some(worker),
            (disk as *const Disk).cast_mut().cast(),
        )
    };
    if !nt_success(status) {
        // SAFETY: both created above; nothing else refers to them yet.
        unsafe {
            IoDeleteDevice(control_device);
            IoDeleteDevice(disk_device);
        }
        return status;
    }
    let mut object: PVOID = null_mut();
    // SAFETY: `thread` is the handle just returned; the reference lets unload wait on it.
    let status = unsafe {
        ObReferenceObjectByHandle(thread, SYNCHRONIZE, null_mut(), 0, &mut object, null_mut())
    };
    // SAFETY: the handle is ours and closed once; the object reference (if any) remains.
    let _ = unsafe { ZwClose(thread) };
    if nt_success(status) {
        // SAFETY: only DriverEntry and Unload touch `thread`, never at the same time.
        unsafe { *disk.thread.get() = object };
    }

    let (mut dn, mut dl, mut cn, mut cl) =
        (disk_name(), disk_link(), control_name(), control_link());
    // SAFETY: valid names; the links are deleted at unload.
    unsafe {
        let _ = IoCreateSymbolicLink(&mut dl, &mut dn);
        let _ = IoCreateSymbolicLink(&mut cl, &mut cn);
    }

    // SAFETY: DriverEntry owns the driver object's dispatch table and the new devices' flags.
    unsafe {
        let d = &mut *driver;
        for major in [
            IRP_MJ_CREATE,
            IRP_MJ_CLOSE,
            IRP_MJ_CLEANUP,
            IRP_MJ_READ,
            IRP_MJ_WRITE,
            IRP_MJ_FLUSH_BUFFERS,
            IRP_MJ_DEVICE_CONTROL,
        ] {
            d.MajorFunction[major] = Some(dispatch);
        }
        d.DriverUnload = Some(unload);
        (*disk_device).Flags |= DO_DIRECT_IO;
        (*disk_device).Flags &= !DO_DEVICE_INITIALIZING;
        (*control_device).Flags |= DO_BUFFERED_IO;
        (*control_device).Flags &= !DO_DEVICE_INITIALIZING;
    }
    STATUS_SUCCESS
}

/// Stops the worker (it drains the queue first), closes the file, removes links and devices.
unsafe extern "C" fn unload(driver: *mut DRIVER_OBJECT) {
    // SAFETY: the driver object's device list holds our two devices until deleted below.
    let first = unsafe { (*driver).DeviceObject };
    let mut device = first;
    while !device.is_null() {
        // SAFETY: `device` is one of ours (from the list) and not deleted yet.
        if let Some(disk) = unsafe { disk_of(device) } {
            // SAFETY: the extension tag says what it is; only the disk's owns the worker.
            if unsafe { *((*device).DeviceExtension as *const u32) } == TAG_DISK {
                disk.stop.store(true, Ordering::Release);
                disk.wake();
                // SAFETY: set once in DriverEntry; only Unload reads it now.
                let thread = unsafe { *disk.thread.get() };
                if !thread.is_null() {
                    // SAFETY: a referenced thread object; waiting for it to end is the join.
                    unsafe {
                        let _ = KeWaitForSingleObject(thread, 0, 0, 0, null_mut());
                        ObfDereferenceObject(thread);
                    }
                }
                // SAFETY: the worker has ended: nothing else uses the handle.
                let _ = unsafe { ZwClose(*disk.file.get()) };
            }
        }
        // SAFETY: walking the list before deleting anything.
        device = unsafe { (*device).NextDevice };
    }
    let (mut dl, mut cl) = (disk_link(), control_link());
    // SAFETY: links made in DriverEntry; failures (never made) are harmless.
    unsafe {
        let _ = IoDeleteSymbolicLink(&mut dl);
        let _ = IoDeleteSymbolicLink(&mut cl);
    }
    let mut device = first;
    while !device.is_null() {
        // SAFETY: read the next pointer before deleting this device; no IRPs are pending (the
        // worker drained the queue) and no thread uses the extensions any more.
        unsafe {
            let next = (*device).NextDevice;
            IoDeleteDevice(device);
            device = next;
        }
    }
    say!("unloaded");
}

/// The worker thread: takes the queued requests, waits the latency, serves them in order.
unsafe extern "C" fn worker(context: PVOID) {
    // SAFETY: `context` is the disk extension, which outlives this thread (Unload joins it).
    let disk = unsafe { &*(context as *const Disk) };
    loop {
        let round = disk.queued();
        if round == 0 {
            if disk.stop.load(Ordering::Acquire) {
                break;
            }
            // SAFETY: the event lives in the extension; an untimed wait is the thread's idle.
            let _ = unsafe { KeWaitForSingleObject(disk.wake.get().cast(), 0, 0, 0, null_mut()) };
            continue;
        }
        let latency = disk.latency_us.load(Ordering::Relaxed);
        if latency > 0 {
            let mut interval = large(-(i64::from(latency) * 10));
            // SAFETY: a relative, non-alertable kernel-mode delay.
            let _ = unsafe { KeDelayExecutionThread(0, 0, &mut interval) };
        }
        for _ in 0..round {
            let Some(irp) = disk.pop() else { break };
            // SAFETY: queued IRPs are pended and ours until completed here.
            unsafe { serve(disk, irp) };
        }
    }
}

/// Serves one queued request with the backing file and completes it.
///
/// # Safety
/// `irp` is a pended IRP of the disk device, owned by the worker.
unsafe fn serve(disk: &Disk, irp: *mut IRP) {
    // SAFETY: contract.
    let st = unsafe { stack(irp) };
    let major = usize::from(st.MajorFunction);
    let (status, info) = if major == IRP_MJ_FLUSH_BUFFERS {
        disk.count(counter::FLUSHES, 1);
        (STATUS_SUCCESS, 0)
    } else {
        // SAFETY: read/write IRPs carry Parameters.Read (Write has the same layout).
        let (offset, length) = unsafe {
            (
                st.Parameters.Read.ByteOffset.QuadPart as u64,
                st.Parameters.Read.Length,
            )
        };
        let write = major == IRP_MJ_WRITE;
        let op = if write { FAULT_WRITE } else { FAULT_READ };
        disk.count(
            if write {
                counter::WRITES
            } else {
                counter::READS
            },
            1,
        );
        if let Some(status) = disk.fault_for(op, offset, u64::from(length)) {
            disk.count(counter::FAULTS_HIT, 1);
            (status, 0)
        } else if write && disk.write_protected.load(Ordering::Relaxed) {
            (STATUS_MEDIA_WRITE_PROTECTED, 0)
        } else {
            // SAFETY: checked at dispatch that a system address exists.
            match unsafe { system_address(irp) } {
                None => (STATUS_INSUFFICIENT_RESOURCES, 0),
                Some(buffer) => {
                    let mut iosb = zero_iosb();
                    let mut at = large(offset as i64);
                    // SAFETY: the worker owns the handle's use; `buffer` holds `length` bytes
                    // (the MDL describes the request's buffer); synchronous I/O.
                    let status = unsafe {
                        let file = *disk.file.get();
                        if write {
                            ZwWriteFile(
                                file,
                                null_mut(),
                                None,
                                null_mut(),
                                &mut iosb,
                                buffer.as_ptr().cast(),
                                length,
                                &mut at,
                                null_mut(),
                            )
                        } else {
                            ZwReadFile(
                                file,
                                null_mut(),
                                None,
                                null_mut(),
                                &mut iosb,
                                buffer.as_ptr().cast(),
                                length,
                                &mut at,
                                null_mut(),
                            )
                        }
                    };
                    if !nt_success(status) {
                        (status, 0)
                    } else if iosb.Information != u64::from(length) {
                        (STATUS_END_OF_FILE, iosb.Information)
                    } else {
                        let which = if write {
                            counter::BYTES_WRITTEN
                        } else {
                            counter::BYTES_READ
                        };
                        disk.count(which, u64::from(length));
                        (STATUS_SUCCESS, u64::from(length))
                    }
                }
            }
        }
    };
    disk.counters[counter::IN_FLIGHT].fetch_sub(1, Ordering::Relaxed);
    // SAFETY: the IRP is ours, completed once.
    unsafe { complete(irp, status, info) };
}

// ---------------------------------------------------------------------------------------------
// Dispatch.

unsafe extern "C" fn dispatch(device: *mut DEVICE_OBJECT, irp: *mut IRP) -> NTSTATUS {
    // SAFETY: the I/O manager calls us with one of our devices and a live IRP.
    let (st, tag, disk) = unsafe {
        (
            stack(irp),
            *((*device).DeviceExtension as *const u32),
            disk_of(device),
        )
    };
    let Some(disk) = disk else {
        // SAFETY: live IRP, completed once.
        return unsafe { complete(irp, STATUS_INVALID_DEVICE_REQUEST, 0) };
    };
    let major = usize::from(st.MajorFunction);
    match (tag, major) {
        (_, IRP_MJ_CREATE | IRP_MJ_CLOSE | IRP_MJ_CLEANUP) => {
            // SAFETY: live IRP, completed once.
            unsafe { complete(irp, STATUS_SUCCESS, 0) }
        }
        (TAG_DISK, IRP_MJ_READ | IRP_MJ_WRITE) => {
            // SAFETY: live read/write IRP of the disk device.
            unsafe { read_write(disk, irp, st) }
        }
        (TAG_DISK, IRP_MJ_FLUSH_BUFFERS) => {
            // SAFETY: live IRP of the disk device.
            unsafe { pend(disk, irp, st) }
        }
        (TAG_DISK, IRP_MJ_DEVICE_CONTROL) => {
            // SAFETY: live IRP of the disk device.
            let (status, info) = unsafe { disk_ioctl(disk, irp, st) };
            // SAFETY: live IRP, completed once.
            unsafe { complete(irp, status, info) }
        }
        (TAG_CONTROL, IRP_MJ_DEVICE_CONTROL) => {
            // SAFETY: live IRP of the control device.
            let (status, info) = unsafe { control_ioctl(disk, irp, st) };
            // SAFETY: live IRP, completed once.
            unsafe { complete(irp, status, info) }
        }
        _ => {
            // SAFETY: live IRP, completed once.
            unsafe { complete(irp, STATUS_INVALID_DEVICE_REQUEST, 0) }
        }
    }
}

/// Marks the IRP pending and queues it for the worker.
///
/// # Safety
/// `irp` is live and ours; `st` is its current stack location.
unsafe fn pend(disk: &Disk, irp: *mut IRP, st: &mut IO_STACK_LOCATION) -> NTSTATUS {
    // IoMarkIrpPending: before the IRP can be completed by another thread.
    st.Control |= SL_PENDING_RETURNED;
    let now = disk.counters[counter::IN_FLIGHT].fetch_add(1, Ordering::Relaxed) + 1;
    disk.counters[counter::MAX_IN_FLIGHT].fetch_max(now, Ordering::Relaxed);
    if let Err(irp) = disk.push(irp) {
        disk.counters[counter::IN_FLIGHT].fetch_sub(1, Ordering::Relaxed);
        disk.count(counter::QUEUE_FULL, 1);
        // SAFETY: not queued, so still ours; completed once. Returning STATUS_PENDING after
        // marking pending is required even though it completed already.
        unsafe { complete(irp, STATUS_DEVICE_BUSY, 0) };
    }
    STATUS_PENDING
}

/// Validates a read or write against the disk's size and limits, then pends it.
///
/// # Safety
/// `irp` is a live read/write IRP of the disk device; `st` its current stack location.
unsafe fn read_write(disk: &Disk, irp: *mut IRP, st: &mut IO_STACK_LOCATION) -> NTSTATUS {
    // SAFETY: read and write parameters share a layout.
    let (offset, length) = unsafe {
        (
            st.Parameters.Read.ByteOffset.QuadPart,
            st.Parameters.Read.Length,
        )
    };
    disk.counters[counter::MAX_LENGTH_SEEN].fetch_max(u64::from(length), Ordering::Relaxed);
    let bytes = disk.bytes.load(Ordering::Relaxed);
    let sector = i64::from(SECTOR);
    let in_range = offset >= 0
        && (offset as u64)
            .checked_add(u64::from(length))
            .is_some_and(|end| end <= bytes);
    if offset % sector != 0 || i64::from(length) % sector != 0 || !in_range {
        if in_range {
            disk.count(counter::LIMIT_VIOLATIONS, 1);
        }
        // SAFETY: live IRP, completed once.
        return unsafe { complete(irp, STATUS_INVALID_PARAMETER, 0) };
    }
    if length == 0 {
        // SAFETY: live IRP, completed once.
        return unsafe { complete(irp, STATUS_SUCCESS, 0) };
    }
    // SAFETY: live IRP.
    unsafe { record(disk, irp, length) };
    // SAFETY: live IRP.
    let Some(address) = (unsafe { system_address(irp) }) else {
        disk.count(counter::NO_BUFFER, 1);
        // SAFETY: live IRP, completed once.
        return unsafe { complete(irp, STATUS_INVALID_PARAMETER, 0) };
    };
    let address = address.as_ptr() as u64;
    let pages = (address % PAGE + u64::from(length)).div_ceil(PAGE);
    let too_long = length > disk.max_transfer.load(Ordering::Relaxed);
    let misaligned = address & u64::from(disk.alignment_mask.load(Ordering::Relaxed)) != 0;
    let too_many_pages = pages > u64::from(disk.max_pages.load(Ordering::Relaxed));
    if too_long || misaligned || too_many_pages {
        disk.count(counter::LIMIT_VIOLATIONS, 1);
        // SAFETY: live IRP, completed once.
        return unsafe { complete(irp, STATUS_INVALID_PARAMETER, 0) };
    }
    // SAFETY: forwarded contract.
    unsafe { pend(disk, irp, st) }
}

/// Records what a read or write carries (docs/review.md W11): its IRP flags (no-cache,
/// paging) and its MDL (partial or not; ByteCount against the length, StartVa and ByteOffset
/// against the system address's page offset, Size against the span), as counters.
///
/// # Safety
/// `irp` is a live read/write IRP of the disk device.
unsafe fn record(disk: &Disk, irp: *mut IRP, length: u32) {
    // SAFETY: the IRP is live (contract).
    let (flags, mdl) = unsafe { ((*irp).Flags, (*irp).MdlAddress) };
    if flags & IRP_NOCACHE == 0 {
        disk.count(counter::NO_CACHE_MISSING, 1);
    }
    if flags & IRP_PAGING_IO != 0 {
        disk.count(counter::PAGING_IO, 1);
    }
    let Some(mdl) = NonNull::new(mdl) else {
        return;
    };
    disk.count(counter::WITH_MDL, 1);
    // SAFETY: the MDL belongs to the live IRP; read only.
    let m = unsafe { mdl.as_ref() };
    if m.MdlFlags & MDL_PARTIAL != 0 {
        disk.count(counter::PARTIAL_MDL, 1);
    }
    let mapped = m.MdlFlags & (MDL_MAPPED_TO_SYSTEM_VA | MDL_SOURCE_IS_NONPAGED_POOL) != 0;
    let offset_agrees = !mapped || (m.MappedSystemVa as u64) % PAGE == u64::from(m.ByteOffset);
    // The MDL's Size holds the page frame numbers of the span it describes (IoBuildPartialMdl
    // and MmBuildMdlForNonPagedPool write that many; a smaller Size is a bugcheck on Windows).
    // Wine 8.0 counts 4 bytes per frame number (its IoAllocateMdl sizes MDLs so).
    let span = (u64::from(m.ByteOffset) + u64::from(m.ByteCount)).div_ceil(PAGE);
    let holds = (m.Size as u64).saturating_sub(size_of::<wdk_sys::MDL>() as u64) / 4 >= span;
    let consistent = m.ByteCount == length
        && (m.StartVa as u64) % PAGE == 0
        && u64::from(m.ByteOffset) < PAGE
        && offset_agrees
        && holds;
    if !consistent {
        disk.count(counter::MDL_MISMATCH, 1);
    }
}

/// The buffered-I/O system buffer and the input and output lengths of a DEVICE_CONTROL IRP.
///
/// # Safety
/// `irp` is a live METHOD_BUFFERED device-control IRP; `st` its current stack location.
unsafe fn ioctl_buffers<'a>(
    irp: *mut IRP,
    st: &IO_STACK_LOCATION,
) -> (u32, &'a mut [u8], usize, usize) {
    // SAFETY: DEVICE_CONTROL IRPs carry Parameters.DeviceIoControl.
    let p = unsafe { st.Parameters.DeviceIoControl };
    let (input, output) = (p.InputBufferLength as usize, p.OutputBufferLength as usize);
    // SAFETY: METHOD_BUFFERED: SystemBuffer holds max(input, output) bytes (or is NULL when
    // both are zero).
    let system = unsafe { (*irp).AssociatedIrp.SystemBuffer }.cast::<u8>();
    let buffer: &mut [u8] = if system.is_null() {
        &mut []
    } else {
        // SAFETY: see above.
        unsafe { core::slice::from_raw_parts_mut(system, input.max(output)) }
    };
    (p.IoControlCode, buffer, input, output)
}

/// The disk's own IOCTLs: length, geometry, writability, adapter limits.
///
/// # Safety
/// As [`ioctl_buffers`].
unsafe fn disk_ioctl(disk: &Disk, irp: *mut IRP, st: &IO_STACK_LOCATION) -> (NTSTATUS, u64) {
    // SAFETY: forwarded contract.
    let (code, buffer, input, output) = unsafe { ioctl_buffers(irp, st) };
    let bytes = disk.bytes.load(Ordering::Relaxed);
    match code {
        IOCTL_DISK_GET_LENGTH_INFO => {
            if output < 8 {
                return (STATUS_BUFFER_TOO_SMALL, 0);
            }
            buffer[..8].copy_from_slice(&bytes.to_le_bytes());
            (STATUS_SUCCESS, 8)
        }
        IOCTL_DISK_GET_DRIVE_GEOMETRY => {
            if output < 24 {
                return (STATUS_BUFFER_TOO_SMALL, 0);
            }
            let sectors_per_track = 63u64;
            let heads = 255u64;
            let cylinders = bytes / (heads * sectors_per_track * u64::from(SECTOR));
            buffer[..24].fill(0);
            buffer[0..8].copy_from_slice(&cylinders.to_le_bytes());
            buffer[8..12].copy_from_slice(&12u32.to_le_bytes()); // FixedMedia
            buffer[12..16].copy_from_slice(&(heads as u32).to_le_bytes());
            buffer[16..20].copy_from_slice(&(sectors_per_track as u32).to_le_bytes());
            buffer[20..24].copy_from_slice(&SECTOR.to_le_bytes());
            (STATUS_SUCCESS, 24)
        }
        IOCTL_DISK_IS_WRITABLE if disk.write_protected.load(Ordering::Relaxed) => {
            (STATUS_MEDIA_WRITE_PROTECTED, 0)
        }
        IOCTL_DISK_IS_WRITABLE => (STATUS_SUCCESS, 0),
        IOCTL_STORAGE_QUERY_PROPERTY => {
            if input < 8 {
                return (STATUS_INVALID_PARAMETER, 0);
            }
            let property = u32::from_le_bytes([buffer[0], buffer[1], buffer[2], buffer[3]]);
            let query = u32::from_le_bytes([buffer[4], buffer[5], buffer[6], buffer[7]]);
            match (property, query) {
                (STORAGE_ADAPTER_PROPERTY, PROPERTY_EXISTS_QUERY) => (STATUS_SUCCESS, 0),
                (STORAGE_ADAPTER_PROPERTY, PROPERTY_STANDARD_QUERY) => {
                    adapter_descriptor(disk, buffer, output)
                }
                (STORAGE_DEVICE_PROPERTY, _) => (STATUS_NOT_SUPPORTED, 0),
                _ => (STATUS_NOT_SUPPORTED, 0),
            }
        }
        _ => (STATUS_INVALID_DEVICE_REQUEST, 0),
    }
}

/// STORAGE_ADAPTER_DESCRIPTOR (or only its 8-byte header when the output is smaller).
fn adapter_descriptor(disk: &Disk, buffer: &mut [u8], output: usize) -> (NTSTATUS, u64) {
    if output < 8 {
        return (STATUS_BUFFER_TOO_SMALL, 0);
    }
    let size = (ADAPTER_DESCRIPTOR_SIZE as u32).to_le_bytes();
    let n = output.min(ADAPTER_DESCRIPTOR_SIZE);
    let mut d = [0u8; ADAPTER_DESCRIPTOR_SIZE];
    d[0..4].copy_from_slice(&size); // Version
    d[4..8].copy_from_slice(&size); // Size
    d[8..12].copy_from_slice(&disk.max_transfer.load(Ordering::Relaxed).to_le_bytes());
    d[12..16].copy_from_slice(&disk.max_pages.load(Ordering::Relaxed).to_le_bytes());
    d[16..20].copy_from_slice(&disk.alignment_mask.load(Ordering::Relaxed).to_le_bytes());
    d[22] = 1; // CommandQueueing
    d[24] = BUS_TYPE_FILE_BACKED_VIRTUAL;
    buffer[..n].copy_from_slice(&d[..n]);
    (STATUS_SUCCESS, n as u64)
}

/// The control device's IOCTLs (vctestdisk-abi).
///
/// # Safety
/// As [`ioctl_buffers`].
unsafe fn control_ioctl(disk: &Disk, irp: *mut IRP, st: &IO_STACK_LOCATION) -> (NTSTATUS, u64) {
    // SAFETY: forwarded contract.
    let (code, buffer, input, output) = unsafe { ioctl_buffers(irp, st) };
    match code {
        IOCTL_SET_FAULT => {
            let Some(fault) = Fault::decode(&buffer[..input]) else {
                return (STATUS_INVALID_PARAMETER, 0);
            };
            let added = disk.shared.with(|s| {
                if s.fault_count == MAX_FAULTS {
                    return false;
                }
                s.faults[s.fault_count] = fault;
                s.fault_count += 1;
                true
            });
            if added {
                (STATUS_SUCCESS, 0)
            } else {
                (STATUS_INSUFFICIENT_RESOURCES, 0)
            }
        }
        IOCTL_CLEAR_FAULTS => {
            disk.shared.with(|s| s.fault_count = 0);
            (STATUS_SUCCESS, 0)
        }
        IOCTL_SET_LATENCY => {
            let Ok(value) = <[u8; 4]>::try_from(&buffer[..input]) else {
                return (STATUS_INVALID_PARAMETER, 0);
            };
            disk.latency_us
                .store(u32::from_le_bytes(value), Ordering::Relaxed);
            (STATUS_SUCCESS, 0)
        }
        IOCTL_SET_DEVICE_TYPE => {
            let Ok(value) = <[u8; 4]>::try_from(&buffer[..input]) else {
                return (STATUS_INVALID_PARAMETER, 0);
            };
            // SAFETY: the disk's device object lives as long as its extension (`disk`); only
            // this test IOCTL writes its DeviceType, between mounts.
            unsafe {
                core::ptr::write_volatile(&raw mut (*disk.device).DeviceType, u32::from_le_bytes(value))
            };
            (STATUS_SUCCESS, 0)
        }
        IOCTL_SET_WRITE_PROTECTED => {
            let Ok(value) = <[u8; 4]>::try_from(&buffer[..input]) else {
                return (STATUS_INVALID_PARAMETER, 0);
            };
            disk.write_protected
                .store(u32::from_le_bytes(value) != 0, Ordering::Relaxed);
            (STATUS_SUCCESS, 0)
        }
        IOCTL_RESET_COUNTERS => {
            for which in [
                counter::READS,
                counter::WRITES,
                counter::FLUSHES,
                counter::BYTES_READ,
                counter::BYTES_WRITTEN,
                counter::FAULTS_HIT,
                counter::LIMIT_VIOLATIONS,
                counter::MAX_LENGTH_SEEN,
                counter::QUEUE_FULL,
                counter::NO_BUFFER,
                counter::NO_CACHE_MISSING,
                counter::MDL_MISMATCH,
                counter::PARTIAL_MDL,
                counter::PAGING_IO,
                counter::WITH_MDL,
            ] {
                disk.counters[which].store(0, Ordering::Relaxed);
            }
            let now = disk.counters[counter::IN_FLIGHT].load(Ordering::Relaxed);
            disk.counters[counter::MAX_IN_FLIGHT].store(now, Ordering::Relaxed);
            (STATUS_SUCCESS, 0)
        }
        IOCTL_COUNTERS => {
            if output < COUNTERS * 8 {
                return (STATUS_BUFFER_TOO_SMALL, 0);
            }
            disk.counters[counter::LATENCY_US].store(
                u64::from(disk.latency_us.load(Ordering::Relaxed)),
                Ordering::Relaxed,
            );
            disk.counters[counter::MAX_TRANSFER].store(
                u64::from(disk.max_transfer.load(Ordering::Relaxed)),
                Ordering::Relaxed,
            );
            disk.counters[counter::DISK_BYTES]
                .store(disk.bytes.load(Ordering::Relaxed), Ordering::Relaxed);
            for (i, c) in disk.counters.iter().enumerate() {
                buffer[i * 8..i * 8 + 8].copy_from_slice(&c.load(Ordering::Relaxed).to_le_bytes());
            }
            ((STATUS_SUCCESS), (COUNTERS * 8) as u64)
        }
        _ => (STATUS_INVALID_DEVICE_REQUEST, 0),
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    say!("panic");
    // SAFETY: a test driver stops the machine (under Wine: its winedevice process) rather than
    // continue in an unknown state. Code "VCTD".
    unsafe { wdk_sys::ntddk::KeBugCheckEx(0x5643_5444, 0, 0, 0, 0) }
}
