//! W5: the hardware XTS passes leave no tweak on the stack of the thread that runs them.
//!
//! Tweaks are derived from the tweak key (a unit's first is its number encrypted with it), so
//! the passes keep them in arrays they wipe, and the driver image's checker requires the passes
//! to call nothing (`scripts/check-sys-image.py`). This test shows the behaviour on the
//! user-mode build: a thread encrypts and decrypts 40 data units on the XMM path and, where
//! the CPU has VAES, on the wide path, deep in its stack; then it reads its whole stack mapping
//! through /proc/self/mem and looks for every tweak of those units (and of the batch's units
//! past them, whose tweaks the wide pass computes too), computed here independently with the
//! `aes` crate and never on that thread. A control thread that leaves one tweak in a frame
//! shows that the scan finds such a copy. Both with a patterned buffer and with zeros (a zero
//! block XORed with its tweak is the tweak). Linux only (/proc); its compiled code is not the
//! driver image's (other callee-saved registers), whose stores the image checks cover.
#![cfg(target_os = "linux")]

use vcdirect_aes_hw::{WideVectors, XtsKeys, DATA_UNIT};
use vcdirect_usermode::stack_scan::{self, Patterns};

const FIRST_UNIT: u64 = 0x1234_5678;
const UNITS: usize = 40;
/// Units whose tweaks a pass may compute: whole batches of 16 past the last one.
const UNITS_COMPUTED: u64 = 48;

fn master() -> [u8; 64] {
    core::array::from_fn(|i| (i as u8).wrapping_mul(29).wrapping_add(0x3d))
}

/// Multiplication by alpha in GF(2^128), IEEE 1619 byte order.
fn times_alpha(t: [u8; 16]) -> [u8; 16] {
    let mut out = [0u8; 16];
    let mut carry = 0u8;
    for (o, b) in out.iter_mut().zip(t) {
        *o = (b << 1) | carry;
        carry = b >> 7;
    }
    if carry != 0 {
        out[0] ^= 0x87;
    }
    out
}

/// Every tweak of the units the passes touch.
fn tweaks(key: &[u8; 64]) -> Patterns {
    use aes09::cipher::{BlockCipherEncrypt, KeyInit};
    let tweak_key = aes09::Aes256::new_from_slice(&key[32..]).unwrap();
    let mut all = Patterns::new();
    for unit in FIRST_UNIT..FIRST_UNIT + UNITS_COMPUTED {
        let mut block = aes09::Block::default();
        block[..8].copy_from_slice(&unit.to_le_bytes());
        tweak_key.encrypt_block(&mut block);
        let mut t: [u8; 16] = block.into();
        for _ in 0..DATA_UNIT / 16 {
            stack_scan::add(&mut all, t);
            t = times_alpha(t);
        }
    }
    all
}

/// Runs `work` deep on a thread of its own, then scans that thread's stack for `patterns`.
fn hits_after(work: &(dyn Fn() + Sync), patterns: &Patterns) -> Vec<usize> {
    stack_scan::hits_after("xts-pass", work, patterns)
}

/// Leaves `tweak` in a frame of its own, as an outlined helper would.
#[inline(never)]
fn leave_in_a_frame(tweak: [u8; 16]) {
    let copy = std::hint::black_box(tweak);
    std::hint::black_box(&copy);
}

#[test]
fn w5_the_xts_passes_leave_no_tweak_on_their_threads_stack() {
    let key = master();
    let patterns = tweaks(&key);
    let mut keys = Box::new(XtsKeys::new());
    assert!(keys.set_key(&key));
    let keys = &*keys;
    let patterned: Vec<u8> = (0..UNITS * DATA_UNIT).map(|i| (i * 7) as u8).collect();
    for plain in [patterned, vec![0u8; UNITS * DATA_UNIT]] {
        let narrow = hits_after(
            &|| {
                let mut buf = plain.clone();
                keys.encrypt(&mut buf, FIRST_UNIT);
                keys.decrypt(&mut buf, FIRST_UNIT);
                assert_eq!(buf, plain);
            },
            &patterns,
        );
        assert!(
            narrow.is_empty(),
            "the XMM pass left tweaks at stack offsets {narrow:?}"
        );

        if WideVectors::available() {
            let wide = hits_after(
                &|| {
                    // The token is per thread (neither Send nor Sync): made on the scanned one.
                    let vectors = WideVectors::in_user_mode().expect("VAES, as `available` said");
                    let mut buf = plain.clone();
                    keys.encrypt_wide(&vectors, &mut buf, FIRST_UNIT);
                    keys.decrypt_wide(&vectors, &mut buf, FIRST_UNIT);
                    assert_eq!(buf, plain);
                },
                &patterns,
            );
            assert!(
                wide.is_empty(),
                "the VAES pass left tweaks at stack offsets {wide:?}"
            );
        } else {
            eprintln!("SKIP (the VAES pass only): this CPU has no VAES");
        }
    }

    // The scan finds a tweak left in a frame: the check can fail.
    let some = *patterns.values().next().unwrap();
    let control = hits_after(&|| leave_in_a_frame(some), &patterns);
    assert!(
        !control.is_empty(),
        "a tweak left in a frame must be found by the scan"
    );
}
