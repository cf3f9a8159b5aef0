//! W6: the kernel's `try_arc` reserves a block of `vcdirect::io::ArcShape<T>`'s layout and the
//! global allocator hands it to `Arc::new` when the pool has nothing. That holds only while
//! `Arc::new::<T>` asks exactly that layout: checked here, with a recording global allocator,
//! on every toolchain CI builds with.
// A global allocator is an unsafe trait; this test binary is its only user.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use vcdirect::io::ArcShape;

/// Records the layouts the recording thread asks while recording.
struct Recording;

thread_local! {
    static RECORDING: Cell<bool> = const { Cell::new(false) };
}
static ASKED: AtomicUsize = AtomicUsize::new(0);
static SIZE: AtomicUsize = AtomicUsize::new(0);
static ALIGN: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged.
unsafe impl GlobalAlloc for Recording {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if RECORDING.with(Cell::get) {
            ASKED.fetch_add(1, Ordering::SeqCst);
            SIZE.store(layout.size(), Ordering::SeqCst);
            ALIGN.store(layout.align(), Ordering::SeqCst);
        }
        // SAFETY: the caller's layout, as GlobalAlloc requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: allocated by `alloc` above with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Recording = Recording;

/// The one layout `Arc::new(value)` asks.
fn asked_by_arc_new<T>(value: T) -> Layout {
    ASKED.store(0, Ordering::SeqCst);
    RECORDING.with(|r| r.set(true));
    let arc = Arc::new(value);
    RECORDING.with(|r| r.set(false));
    drop(arc);
    assert_eq!(
        ASKED.load(Ordering::SeqCst),
        1,
        "Arc::new made one allocation"
    );
    Layout::from_size_align(SIZE.load(Ordering::SeqCst), ALIGN.load(Ordering::SeqCst)).unwrap()
}

#[repr(align(64))]
struct Aligned64(#[allow(dead_code)] [u8; 100]);

#[test]
fn w6_arc_new_asks_exactly_the_layout_try_arc_reserves() {
    assert_eq!(asked_by_arc_new(7u8), Layout::new::<ArcShape<u8>>());
    assert_eq!(
        asked_by_arc_new([0u8; 70_000]),
        Layout::new::<ArcShape<[u8; 70_000]>>()
    );
    let aligned = asked_by_arc_new(Aligned64([0; 100]));
    assert_eq!(aligned, Layout::new::<ArcShape<Aligned64>>());
    assert_eq!(
        aligned.align(),
        64,
        "the over-aligned value keeps its alignment"
    );
}
