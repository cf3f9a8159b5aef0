//! W5: the portable AES path (a CPU without AES instructions) keys RustCrypto `aes` by value,
//! then burns the stack below its caller (`crypto::burn_stack`): nothing the keying wrote may
//! lie deeper than the zeros of the burn.
//!
//! The check does not depend on how the `aes` crate lays out its schedules (round keys on the
//! AES-NI branch of its run-time choice, bitsliced words in its fixsliced software form, which
//! a build with `--cfg aes_force_soft` runs: `scripts/test-all.sh` runs this test both ways). A
//! thread paints 128 KiB of its stack below one frame with a canary, keys the portable path
//! from that frame, and reads its own stack through /proc/self/mem: the deepest byte that is no
//! longer the canary must start the burn's run of zeros. Without the burn (fault
//! `W5PortableKeysUnburnt`) the deepest byte written is the keying's. Release builds only: in an
//! unoptimised build the burn's own zeroing calls functions whose frames lie below its zeros.

use std::fs::File;
use std::hint::black_box;
use std::io::{Read, Seek, SeekFrom};

use vcdirect::crypto::XtsCipher;
use vcdirect::faults::{set_faults, Fault};

const PAINT: usize = 128 << 10;
const CANARY: u8 = 0xa5;
/// The burn's zeros: a run at least this long.
const ZERO_RUN: usize = 1 << 10;
/// The most bytes the burn's callee (the fill of its zeros) writes below them.
const CALLEE: usize = 64;

/// Fills `PAINT` bytes of the stack below the caller with the canary.
#[inline(never)]
fn paint() {
    let area = black_box([CANARY; PAINT]);
    black_box(&area);
}

/// Keys the portable path and wipes it, as a mount on a CPU without AES instructions does.
#[inline(never)]
fn key() {
    let master: [u8; 64] = core::array::from_fn(|i| (i as u8).wrapping_mul(29) ^ 0x6b);
    let mut cipher = XtsCipher::portable(black_box(&master));
    assert_eq!(cipher.path(), "aes-crate");
    cipher.clear();
}

/// This thread's stack mapping, read through /proc/self/mem, and the offset of `here` in it.
fn own_stack(here: usize) -> (Vec<u8>, usize) {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    let (start, end) = maps
        .lines()
        .filter_map(|l| {
            let (a, b) = l.split_whitespace().next()?.split_once('-')?;
            Some((
                usize::from_str_radix(a, 16).ok()?,
                usize::from_str_radix(b, 16).ok()?,
            ))
        })
        .find(|&(a, b)| (a..b).contains(&here))
        .expect("the mapping that holds this thread's stack");
    let mut stack = vec![0u8; end - start];
    let mut mem = File::open("/proc/self/mem").expect("open /proc/self/mem");
    mem.seek(SeekFrom::Start(start as u64)).expect("seek");
    mem.read_exact(&mut stack)
        .expect("read this thread's stack");
    (stack, here - start)
}

/// Paints, keys from the same frame, then describes the deepest write below that frame: its
/// depth below the frame, and how far above it the first run of at least [`ZERO_RUN`] zeros
/// starts (`None`: no such run up to the frame). The burn's own call to fill its zeros (its
/// return address and saved frame pointer) lies just below them: [`CALLEE`] bytes at most.
#[inline(never)]
fn deepest_write() -> (usize, Option<usize>) {
    let marker = black_box(0u64);
    let here = &marker as *const u64 as usize;
    paint();
    key();
    let (stack, top) = own_stack(here);
    let bottom = top - PAINT + 4096;
    let deepest = (bottom..top)
        .find(|&i| stack[i] != CANARY)
        .expect("the keying wrote below this frame");
    assert!(
        stack[bottom..deepest].iter().all(|&b| b == CANARY),
        "the paint reached deeper than the search"
    );
    let mut run = 0;
    let zeros_at = (deepest..top).find(|&i| {
        run = if stack[i] == 0 { run + 1 } else { 0 };
        run == ZERO_RUN
    });
    (
        top - deepest,
        zeros_at.map(|end| end + 1 - ZERO_RUN - deepest),
    )
}

fn on_a_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn_scoped(s, f)
            .expect("spawn")
            .join()
            .expect("the keying thread")
    })
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "release only: unoptimised, the burn's zeroing calls functions below its zeros"
)]
fn w5_portable_keying_leaves_nothing_below_the_burn() {
    set_faults(&[]);
    let (depth, zeros) = on_a_thread(deepest_write);
    eprintln!("w5: deepest write {depth} bytes below the keying's caller; the burn's zeros {zeros:?} bytes above it");
    assert!(
        zeros.is_some_and(|gap| gap <= CALLEE),
        "W5: the keying wrote {depth} bytes below its caller, below the burn's zeros (first run \
         of {ZERO_RUN} zeros {zeros:?} bytes above that)"
    );

    // The check bites: without the burn the deepest write is the keying's own.
    set_faults(&[Fault::W5PortableKeysUnburnt]);
    let (depth, zeros) = on_a_thread(deepest_write);
    set_faults(&[]);
    eprintln!("w5 without the burn: deepest write {depth} bytes below; zeros {zeros:?} above it");
    assert!(
        zeros.is_none_or(|gap| gap > CALLEE),
        "without the burn the deepest write must be the keying's ({depth} bytes below)"
    );
}
