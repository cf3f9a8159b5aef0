//! W5: vcctl's secret buffers leave no password or keyfile byte in freed memory.
//!
//! A global allocator scans every block freed (and every block a reallocation leaves) for a
//! marker; reading a password line and a keyfile with the marker must free none that holds it.
// A global allocator is an unsafe trait; this test binary is its only user.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The secret the test reads; no other code in this binary writes these bytes to the heap.
const MARKER: &[u8] = b"w5-Secret-Marker-9f3b2c";

/// Freed blocks that held the marker.
static LEAKS: AtomicUsize = AtomicUsize::new(0);

struct Scanning;

// SAFETY: every call is forwarded to the system allocator unchanged; `dealloc` only reads the
// block it is about to free, which is `layout.size()` initialized-or-not bytes it owns (u8
// reads of any bit pattern are fine for a scan).
unsafe impl GlobalAlloc for Scanning {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` is a live block of `layout.size()` bytes until freed below.
        let block = unsafe { std::slice::from_raw_parts(ptr, layout.size()) };
        if block.windows(MARKER.len()).any(|w| w == MARKER) {
            LEAKS.fetch_add(1, Ordering::SeqCst);
        }
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Scanning = Scanning;

/// One test, so no other test thread frees a marker block meanwhile.
#[test]
fn w5_password_and_keyfile_buffers_are_wiped_before_free() {
    // The scan catches a plain buffer (the check can fail).
    let before = LEAKS.load(Ordering::SeqCst);
    drop(std::hint::black_box(MARKER.to_vec()));
    assert_eq!(
        LEAKS.load(Ordering::SeqCst),
        before + 1,
        "the scan sees freed blocks"
    );

    // A password line (the input is a static slice, not heap memory).
    let before = LEAKS.load(Ordering::SeqCst);
    let input: &'static [u8] = b"w5-Secret-Marker-9f3b2c\r\nhidden\n";
    let lines = vcctl::secret::read_lines(input, 2).unwrap();
    assert_eq!(&lines[0][..], MARKER);
    drop(lines);
    assert_eq!(
        LEAKS.load(Ordering::SeqCst),
        before,
        "a password line was freed unwiped"
    );

    // A keyfile holding the marker, mixed into a password.
    let dir = std::env::temp_dir().join(format!("vcctl-w5-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("keyfile");
    {
        let mut f = std::fs::File::create(&path).unwrap();
        std::io::Write::write_all(&mut f, &[MARKER; 100].concat()).unwrap();
    }
    let before = LEAKS.load(Ordering::SeqCst);
    let mixed = vcctl::keyfile::apply_keyfiles(b"pw", &[&path]).unwrap();
    drop(mixed);
    let after = LEAKS.load(Ordering::SeqCst);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(after, before, "a keyfile buffer was freed unwiped");
}
