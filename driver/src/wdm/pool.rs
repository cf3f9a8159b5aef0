//! Pool memory: the driver's global allocator.
//!
//! Owns: nonpaged, no-execute pool allocations tagged [`DRIVER_TAG`].
//! Never: allocates paged pool (the engine touches its memory at DISPATCH_LEVEL under spin
//! locks) or imports `ExAllocatePool2`: Windows 10 before 2004 and Wine 8.0 lack it, and an
//! import the loader cannot resolve stops the driver from loading. [`resolve`] looks it up at
//! run time with `MmGetSystemRoutineAddress` (Microsoft's documented pattern) and the
//! allocator falls back to `ExAllocatePoolWithTag(NonPagedPoolNx)` (Windows 8 and later).

use alloc::boxed::Box;
use alloc::sync::Arc;
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
///
/// Never inlined: its call through the looked-up ExAllocatePool2 pointer must stay in a
/// `wdm::pool` function, which the image's stack check knows leads into the kernel (W13); inlined
/// into a caller, that call would count as one to any function whose address the driver takes.
#[inline(never)]
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
        // W6, Wine build: the injection may say the pool has nothing for this `Arc::new`.
        #[cfg(feature = "wine-host")]
        if injection::pool_empty_for_arc() {
            return reserve::take(layout);
        }
        let block = allocate_layout(layout);
        if block.is_null() {
            // W6: the one allocation `try_arc` is making, from the block it reserved.
            return reserve::take(layout);
        }
        block
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` with `layout` (GlobalAlloc contract).
        unsafe { free_layout(ptr, layout) };
    }
}

/// Pool memory for `layout` (over-aligned layouts keep the pool pointer just before the
/// block), or NULL.
fn allocate_layout(layout: Layout) -> *mut u8 {
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

/// Frees a block of [`allocate_layout`]. Only the alignment class of `layout` matters (at most
/// 16: the block is the pool block; above: the pool pointer is just before it).
///
/// # Safety
/// `ptr` came from [`allocate_layout`] with a layout of the same alignment class, not freed.
unsafe fn free_layout(ptr: *mut u8, layout: Layout) {
    let base = if layout.align() <= POOL_ALIGNMENT {
        ptr
    } else {
        let slot = ptr
            .wrapping_sub(core::mem::size_of::<*mut u8>())
            .cast::<*mut u8>();
        // SAFETY: `allocate_layout` stored the pool pointer in this slot of every over-aligned
        // block.
        unsafe { slot.read() }
    };
    // SAFETY: `base` is a pool block allocated with DRIVER_TAG and not yet freed.
    unsafe { ExFreePoolWithTag(base.cast(), DRIVER_TAG) };
}

/// A fallible allocation of `layout` (W6): NULL when the pool has none, or when the Wine
/// build's allocation-failure injection says this one fails ([`injection`]).
fn try_allocate(layout: Layout) -> *mut u8 {
    if crate::faults::allocation_fails() {
        return core::ptr::null_mut();
    }
    allocate_layout(layout)
}

/// `Box::new`, but a failed pool allocation is STATUS_INSUFFICIENT_RESOURCES instead of the
/// allocation-error handler (W6: the caller fails or does without, the machine never
/// bugchecks). Stable Rust has no `Box::try_new`. Asks the allocation-failure injection.
///
/// IRQL: <= DISPATCH_LEVEL (nonpaged pool).
pub fn try_box<T>(value: T) -> Result<Box<T>, crate::Status> {
    let layout = Layout::new::<T>();
    if layout.size() == 0 {
        // A zero-sized box allocates nothing.
        return Ok(Box::new(value));
    }
    let raw = try_allocate(layout).cast::<T>();
    if raw.is_null() {
        return Err(crate::Status::InsufficientResources);
    }
    // SAFETY: `raw` is a fresh, suitably aligned block of `T`'s size, ours alone.
    unsafe { raw.write(value) };
    // SAFETY: the block holds an initialized `T`, allocated as the global allocator allocates
    // `T`'s layout, which the Box frees through the global allocator with the same layout.
    Ok(unsafe { Box::from_raw(raw) })
}

/// A zeroed block of `layout` (non-zero size) owned by nobody yet, or NULL (W6, with the
/// injection): for kernel objects whose all-zero state is valid before their initialization.
/// The caller frees it through the global allocator with `layout` (e.g. as a `Box`).
pub fn try_allocate_zeroed(layout: Layout) -> *mut u8 {
    let block = try_allocate(layout);
    if !block.is_null() {
        // SAFETY: a fresh block of at least `layout.size()` bytes.
        unsafe { core::ptr::write_bytes(block, 0, layout.size()) };
    }
    block
}

/// What `Arc::new` allocates for a `T` (`crate::io::ArcShape`, checked against the standard
/// library by a user-mode test). Used only for the size and alignment of the block
/// [`try_arc`] reserves; should the standard library ever allocate differently, the reserved
/// block does not fit and is not handed out (`reserve::take` checks).
use crate::io::ArcShape;

/// `Arc::new`, but a failed pool allocation is STATUS_INSUFFICIENT_RESOURCES (W6). Stable Rust
/// has no `Arc::try_new`, and an `Arc` cannot be built around a block allocated elsewhere, so
/// the block is reserved first, fallibly: `Arc::new` then allocates from the pool as usual,
/// and should the pool have nothing for it, the global allocator hands it the block reserved
/// on this thread (`reserve`), so the allocation-error handler is never reached. The reserved
/// block is freed when `Arc::new` did not need it.
///
/// IRQL: PASSIVE_LEVEL or APC_LEVEL only. The reserved block is keyed by the calling thread,
/// and at DISPATCH_LEVEL or above "the current thread" is whichever thread the processor
/// interrupted, so the hand-off is refused there (`reserve`): at DISPATCH_LEVEL this returns
/// STATUS_INSUFFICIENT_RESOURCES without calling `Arc::new`. Every caller is the mount's
/// thread at PASSIVE_LEVEL.
pub fn try_arc<T>(value: T) -> Result<Arc<T>, crate::Status> {
    let layout = Layout::new::<ArcShape<T>>();
    let block = try_allocate(layout);
    if block.is_null() {
        return Err(crate::Status::InsufficientResources);
    }
    let Some(slot) = reserve::put(block, layout) else {
        // SAFETY: allocated just above with `layout`, never handed out.
        unsafe { free_layout(block, layout) };
        return Err(crate::Status::InsufficientResources);
    };
    #[cfg(feature = "wine-host")]
    injection::reserved();
    let arc = Arc::new(value);
    #[cfg(feature = "wine-host")]
    injection::released();
    let unused = reserve::end(slot);
    if !unused.is_null() {
        // SAFETY: the reserved block, which `Arc::new` did not take: ours, freed once.
        unsafe { free_layout(unused, layout) };
    }
    Ok(arc)
}

/// The blocks [`try_arc`] reserved, one per thread making one: [`SLOTS`] (four) shared by every
/// thread making one at the same time (mounts open their hosts side by side, outside the
/// control mutex, so concurrent mounts share these slots with each other and with the other
/// threads; one that finds none free allocates as it would without the reserve).
/// Below DISPATCH_LEVEL (see `reserve`): the current thread is the one running this code
/// (the product's top-level IRP read, `wdm/irp.rs`).
#[cfg(not(feature = "wine-host"))]
pub(crate) use reserve::below_dispatch;

mod reserve {
    use core::alloc::Layout;
    use core::ffi::c_void;
    use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

    use super::POOL_ALIGNMENT;

    extern "system" {
        // An export on every Windows version and Wine (as in thread.rs).
        fn KeGetCurrentThread() -> wdk_sys::PETHREAD;
    }

    struct Reserved {
        /// The thread that owns the slot (NULL: free).
        thread: AtomicPtr<c_void>,
        /// The block, until the allocator takes it or `end` does.
        block: AtomicPtr<u8>,
        size: AtomicUsize,
        align: AtomicUsize,
    }

    /// Below DISPATCH_LEVEL, where the current thread cannot change under us and is the one
    /// that reserved (W6). x64 product: the IRQL is CR8 (what the WDK's inline
    /// KeGetCurrentIrql reads; no import). Wine build: user mode, where reading CR8 faults
    /// and Wine's KeGetCurrentIrql always answers PASSIVE_LEVEL: the mount's thread, always
    /// passive. ARM64 product: KeGetCurrentIrql, which the WDK's ARM64 headers import from
    /// hal.dll rather than inline (docs/arm64.md; the toolchain's ARM64 hal.lib exports it).
    pub(crate) fn below_dispatch() -> bool {
        #[cfg(all(target_arch = "aarch64", not(feature = "wine-host")))]
        {
            extern "system" {
                // hal.dll on ARM64 (docs/arm64.md "Where ARM64 differs"); returns a KIRQL.
                fn KeGetCurrentIrql() -> u8;
            }
            // SAFETY: no preconditions, callable at any IRQL; reads the processor's IRQL.
            let irql = unsafe { KeGetCurrentIrql() };
            irql < wdk_sys::DISPATCH_LEVEL as u8
        }
        #[cfg(all(target_arch = "x86_64", not(feature = "wine-host")))]
        {
            let irql: u64;
            // SAFETY: reading CR8 (the task priority register, the IRQL on x64) is allowed at
            // ring 0 and changes nothing: no memory, stack or flags touched.
            unsafe {
                core::arch::asm!("mov {}, cr8", out(reg) irql, options(nomem, nostack, preserves_flags))
            };
            irql < u64::from(wdk_sys::DISPATCH_LEVEL)
        }
        #[cfg(any(
            feature = "wine-host",
            not(any(target_arch = "x86_64", target_arch = "aarch64"))
        ))]
        {
            true
        }
    }

    const SLOTS: usize = 4;
    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: Reserved = Reserved {
        thread: AtomicPtr::new(core::ptr::null_mut()),
        block: AtomicPtr::new(core::ptr::null_mut()),
        size: AtomicUsize::new(0),
        align: AtomicUsize::new(0),
    };
    static SLOT: [Reserved; SLOTS] = [FREE; SLOTS];

    fn current() -> *mut c_void {
        // SAFETY: no preconditions, any IRQL.
        unsafe { KeGetCurrentThread() }.cast()
    }

    /// Records `block` (of `layout`) for the calling thread; the slot's index, or `None`
    /// when every slot is taken.
    pub(super) fn put(block: *mut u8, layout: Layout) -> Option<usize> {
        if !below_dispatch() {
            return None;
        }
        let me = current();
        let at = SLOT.iter().position(|r| {
            r.thread
                .compare_exchange(
                    core::ptr::null_mut(),
                    me,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
        })?;
        let r = &SLOT[at];
        r.size.store(layout.size(), Ordering::Relaxed);
        r.align.store(layout.align(), Ordering::Relaxed);
        // Release: whoever sees the block (Acquire in `take`) sees its size and alignment.
        r.block.store(block, Ordering::Release);
        Some(at)
    }

    /// Frees the slot; returns its block when the allocator did not take it (else NULL).
    pub(super) fn end(at: usize) -> *mut u8 {
        let Some(r) = SLOT.get(at) else {
            return core::ptr::null_mut();
        };
        let block = r.block.swap(core::ptr::null_mut(), Ordering::Relaxed);
        r.thread.store(core::ptr::null_mut(), Ordering::Release);
        block
    }

    /// The calling thread's reserved block when it fits `layout` (as large, as aligned, and
    /// of the same alignment class, so the allocator frees it the same way), else NULL.
    pub(super) fn take(layout: Layout) -> *mut u8 {
        if !below_dispatch() {
            return core::ptr::null_mut();
        }
        let me = current();
        for r in &SLOT {
            // Only the owning thread touches its slot's block after `put`.
            if r.thread.load(Ordering::Acquire) != me || r.block.load(Ordering::Acquire).is_null() {
                continue;
            }
            let (size, align) = (
                r.size.load(Ordering::Relaxed),
                r.align.load(Ordering::Relaxed),
            );
            let fits = layout.size() <= size
                && layout.align() <= align
                && (layout.align() <= POOL_ALIGNMENT) == (align <= POOL_ALIGNMENT);
            if fits {
                return r.block.swap(core::ptr::null_mut(), Ordering::AcqRel);
            }
        }
        core::ptr::null_mut()
    }
}

/// W6 in the Wine build: kernel-side allocation-failure injection. The registry value
/// [`injection::VALUE_NAME`] (REG_DWORD n, under the service key, read as each mount starts)
/// makes the n-th fallible allocation of that mount fail (`try_box`, `try_arc`, the
/// semaphores' and work items' allocations, and the engine's `try_vec`, which asks through
/// `faults::allocation_fails`): the mount must fail with STATUS_INSUFFICIENT_RESOURCES and
/// undo what it made. 0 or missing: none fails. The count of fallible allocations a mount
/// asked is printed (DbgPrint) when it ends. A second value, [`injection::HANDOFF_VALUE_NAME`]
/// = k, makes the pool have nothing for the `Arc::new` of the mount's k-th `try_arc`, so the
/// global allocator hands it the reserved block (`reserve::take`): the mount must succeed
/// and the later dismount free that block like any other.
#[cfg(feature = "wine-host")]
pub mod injection {
    use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

    use super::super::thread::current_thread;

    /// The registry value that names the allocation to fail.
    pub const VALUE_NAME: &str = "VcdirectWineFailAllocationAt";

    /// The registry value that names the `try_arc` whose `Arc::new` gets the reserved block.
    pub const HANDOFF_VALUE_NAME: &str = "VcdirectWineHandOffArcAt";

    /// The mounting thread whose allocations are counted (NULL: disarmed).
    static ARMED: AtomicPtr<core::ffi::c_void> = AtomicPtr::new(core::ptr::null_mut());
    static SEEN: AtomicU64 = AtomicU64::new(0);
    static FAIL_AT: AtomicU64 = AtomicU64::new(0);
    /// `try_arc` calls of the mount, the one whose `Arc::new` finds the pool empty, and the
    /// reserved blocks handed out.
    static ARCS: AtomicU64 = AtomicU64::new(0);
    static HANDOFF_AT: AtomicU64 = AtomicU64::new(0);
    static HANDED: AtomicU64 = AtomicU64::new(0);
    /// Set while the chosen `try_arc`'s reservation is held, until its block is handed out.
    static POOL_EMPTY: AtomicBool = AtomicBool::new(false);

    /// What a mount asked, reported when it ends.
    pub struct Counts {
        /// Fallible allocations.
        pub asked: u64,
        /// `try_arc` calls.
        pub arcs: u64,
        /// Reserved blocks `Arc::new` got from the global allocator.
        pub handed: u64,
    }

    /// Starts counting the calling (mounting) thread's fallible allocations; the `fail_at`-th
    /// fails (0: none); the `handoff_at`-th `try_arc` finds the pool empty (0: none).
    pub fn arm(fail_at: u32, handoff_at: u32) {
        SEEN.store(0, Ordering::SeqCst);
        ARCS.store(0, Ordering::SeqCst);
        HANDED.store(0, Ordering::SeqCst);
        FAIL_AT.store(u64::from(fail_at), Ordering::SeqCst);
        HANDOFF_AT.store(u64::from(handoff_at), Ordering::SeqCst);
        ARMED.store(current_thread().cast(), Ordering::SeqCst);
    }

    /// Stops counting; what was asked since `arm`.
    pub fn disarm() -> Counts {
        ARMED.store(core::ptr::null_mut(), Ordering::SeqCst);
        FAIL_AT.store(0, Ordering::SeqCst);
        HANDOFF_AT.store(0, Ordering::SeqCst);
        POOL_EMPTY.store(false, Ordering::SeqCst);
        Counts {
            asked: SEEN.load(Ordering::SeqCst),
            arcs: ARCS.load(Ordering::SeqCst),
            handed: HANDED.load(Ordering::SeqCst),
        }
    }

    fn mounting_thread() -> bool {
        let armed = ARMED.load(Ordering::SeqCst);
        !armed.is_null() && armed == current_thread().cast()
    }

    /// `try_arc` holds its reservation: the chosen one's `Arc::new` finds the pool empty.
    pub fn reserved() {
        if mounting_thread() {
            let n = ARCS.fetch_add(1, Ordering::SeqCst) + 1;
            POOL_EMPTY.store(n == HANDOFF_AT.load(Ordering::SeqCst), Ordering::SeqCst);
        }
    }

    /// `try_arc`'s `Arc::new` returned.
    pub fn released() {
        if mounting_thread() {
            POOL_EMPTY.store(false, Ordering::SeqCst);
        }
    }

    /// True (once) when the global allocator is to act as if the pool had nothing: the
    /// mounting thread's allocation inside the chosen `try_arc`'s `Arc::new`.
    pub fn pool_empty_for_arc() -> bool {
        if !POOL_EMPTY.load(Ordering::SeqCst) || !mounting_thread() {
            return false;
        }
        POOL_EMPTY.store(false, Ordering::SeqCst);
        HANDED.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// The rule above as the engine's [`crate::platform::AllocationInjection`], installed at
    /// DriverEntry ([`install`]) so the engine's fallible allocations ask it through the
    /// platform seam rather than by naming the glue.
    struct MountThreadInjection;

    impl crate::platform::AllocationInjection for MountThreadInjection {
        fn fails(&self) -> bool {
            fails()
        }
    }

    static INSTALLED: &dyn crate::platform::AllocationInjection = &MountThreadInjection;

    /// Hands the injection to the engine (DriverEntry; disarmed until a mount arms it). Statics
    /// are per image: a reloaded image installs again into its own copy, and nothing points
    /// across images.
    pub fn install() {
        let _ = crate::platform::install_allocation_injection(&INSTALLED);
    }

    /// True when this fallible allocation is the one to fail. Only the mounting thread's
    /// allocations count (keyed by its KTHREAD, stable per thread under Wine), so another
    /// thread's (a serving volume's, a dismount's, the engine threads the mount starts)
    /// cannot shift n. One mounting thread is armed at a time: the Wine tests that inject
    /// allocation failures mount one volume at a time (mounts may run side by side
    /// otherwise, their host opens outside the control mutex).
    fn fails() -> bool {
        if !mounting_thread() {
            return false;
        }
        let n = SEEN.fetch_add(1, Ordering::SeqCst) + 1;
        n == FAIL_AT.load(Ordering::SeqCst)
    }
}
