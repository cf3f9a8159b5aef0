//! Pool memory: the driver's global allocator.
//!
//! Owns: nonpaged, no-execute pool allocations tagged [`DRIVER_TAG`].
//! Never: allocates paged pool (the engine touches its memory at DISPATCH_LEVEL under spin
//! locks) or imports `ExAllocatePool2`: Windows 10 before 2004 and Wine 8.0 lack it, and an
//! import the loader cannot resolve stops the driver from loading. [`resolve`] looks it up at
//! run time with `MmGetSystemRoutineAddress` (Microsoft's documented pattern) and the
//! allocator falls back to `ExAllocatePoolWithTag(NonPagedPoolNx)` (Windows 8 and later).

use alloc::boxed::Box;
use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;
use core::sync::atomic::{AtomicPtr, Ordering};

use wdk_sys::ntddk::{ExFreePoolWithTag, MmGetSystemRoutineAddress};
use wdk_sys::{_POOL_TYPE::NonPagedPoolNx, POOL_TYPE};

use super::strings::{unicode, utf16};
use super::DRIVER_TAG;

/// POOL_FLAG_NON_PAGED: nonpaged and no-execute (ExAllocatePool2 never hands out executable
/// pool unless asked).
const POOL_FLAG_NON_PAGED: u64 = 0x40;

/// Pool allocations are 16-byte aligned on x64 and ARM64.
const POOL_ALIGNMENT: usize = 16;

type ExAllocatePool2Fn = unsafe extern "system" fn(u64, usize, u32) -> *mut c_void;

extern "system" {
    // Blocklisted by wdk-sys (deprecated in favour of ExAllocatePool2), still exported by every
    // Windows version and by Wine.
    fn ExAllocatePoolWithTag(pool_type: POOL_TYPE, bytes: usize, tag: u32) -> *mut c_void;
}

static EX_ALLOCATE_POOL2: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());

static EX_ALLOCATE_POOL2_NAME: [u16; 15] = utf16("ExAllocatePool2");

/// Looks up `ExAllocatePool2`; until then, or where it does not exist, the allocator uses
/// `ExAllocatePoolWithTag`. Returns whether it was found.
///
/// IRQL: PASSIVE_LEVEL (MmGetSystemRoutineAddress). Called once from DriverEntry.
pub fn resolve() -> bool {
    let mut name = unicode(&EX_ALLOCATE_POOL2_NAME);
    // SAFETY: `name` describes a static UTF-16 string; PASSIVE_LEVEL per the contract.
    let routine = unsafe { MmGetSystemRoutineAddress(&mut name) };
    EX_ALLOCATE_POOL2.store(routine, Ordering::Release);
    !routine.is_null()
}

/// Allocates `bytes` of nonpaged NX pool, or returns NULL.
fn allocate(bytes: usize) -> *mut u8 {
    let routine = EX_ALLOCATE_POOL2.load(Ordering::Acquire);
    if routine.is_null() {
        // SAFETY: plain pool allocation; the allocator contract (IRQL <= DISPATCH_LEVEL for
        // nonpaged pool) is the caller's.
        unsafe { ExAllocatePoolWithTag(NonPagedPoolNx, bytes, DRIVER_TAG).cast() }
    } else {
        // SAFETY: `routine` is the kernel's ExAllocatePool2 (found by name in `resolve`), whose
        // documented signature is `ExAllocatePool2Fn`.
        let allocate2: ExAllocatePool2Fn = unsafe { core::mem::transmute(routine) };
        // SAFETY: as for ExAllocatePoolWithTag above.
        unsafe { allocate2(POOL_FLAG_NON_PAGED, bytes, DRIVER_TAG).cast() }
    }
}

/// The global allocator of vcdirect.sys (nonpaged NX pool, tag `vcDr`).
///
/// IRQL: allocation and deallocation at IRQL <= DISPATCH_LEVEL.
/// Alignments above 16 bytes over-allocate and keep the pool pointer just before the block.
pub struct KernelAllocator;

// SAFETY: every block comes from the pool with at least `layout.size()` usable bytes aligned to
// `layout.align()`, and `dealloc` frees exactly the pool block that `alloc` obtained.
unsafe impl GlobalAlloc for KernelAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let size = layout.size().max(1);
        if layout.align() <= POOL_ALIGNMENT {
            return allocate(size);
        }
        let header = core::mem::size_of::<*mut u8>();
        let Some(total) = size.checked_add(layout.align() + header) else {
            return core::ptr::null_mut();
        };
        let base = allocate(total);
        if base.is_null() {
            return base;
        }
        let first = base as usize + header;
        let aligned = (first + layout.align() - 1) & !(layout.align() - 1);
        let block = base.wrapping_add(aligned - base as usize);
        let slot = block.wrapping_sub(header).cast::<*mut u8>();
        // SAFETY: `slot` lies inside the allocation (aligned >= base + header) and is
        // pointer-aligned (block is aligned to more than 16, slot is 8 below it).
        unsafe { slot.write(base) };
        block
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let base = if layout.align() <= POOL_ALIGNMENT {
            ptr
        } else {
            let slot = ptr
                .wrapping_sub(core::mem::size_of::<*mut u8>())
                .cast::<*mut u8>();
            // SAFETY: `alloc` stored the pool pointer in this slot of every over-aligned block.
            unsafe { slot.read() }
        };
        // SAFETY: `base` is a pool block allocated with DRIVER_TAG and not yet freed.
        unsafe { ExFreePoolWithTag(base.cast(), DRIVER_TAG) };
    }
}

/// `Box::new`, but a failed pool allocation is STATUS_INSUFFICIENT_RESOURCES instead of the
/// allocation-error handler (W6: the caller fails or does without, the machine never
/// bugchecks). Stable Rust has no `Box::try_new`.
///
/// IRQL: <= DISPATCH_LEVEL (nonpaged pool).
pub fn try_box<T>(value: T) -> Result<Box<T>, crate::Status> {
    let layout = Layout::new::<T>();
    if layout.size() == 0 {
        // A zero-sized box allocates nothing.
        return Ok(Box::new(value));
    }
    // SAFETY: a layout of non-zero size; the global allocator (this module's).
    let raw = unsafe { alloc::alloc::alloc(layout) }.cast::<T>();
    if raw.is_null() {
        return Err(crate::Status::InsufficientResources);
    }
    // SAFETY: `raw` is a fresh, suitably aligned block of `T`'s size, ours alone.
    unsafe { raw.write(value) };
    // SAFETY: the block holds an initialized `T`, allocated by the global allocator with
    // `T`'s layout, which the Box frees with the same layout.
    Ok(unsafe { Box::from_raw(raw) })
}
