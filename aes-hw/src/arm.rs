//! The ARMv8 AES instructions on NEON registers (aarch64), in the same shape as the x86_64
//! path (see `x86.rs`): 8-wide initial tweaks, 8 data blocks per group, tweaks doubled in
//! registers, round keys read with volatile loads.
//!
//! ARMv8's AESE adds the round key before SubBytes/ShiftRows and AESMC is MixColumns, so a
//! round is AESMC(AESE(x, k)) and the last key is a plain XOR; decryption mirrors it with
//! AESD/AESIMC over the same equivalent-inverse schedule the x86_64 path uses.

use core::arch::aarch64::{
    uint8x16_t, vaesdq_u8, vaeseq_u8, vaesimcq_u8, vaesmcq_u8, vandq_u64, vcombine_u64,
    vcreate_u64, vdupq_n_u32, vdupq_n_u8, veorq_u64, veorq_u8, vextq_u64, vgetq_lane_u32, vld1q_u8,
    vreinterpretq_s64_u64, vreinterpretq_u32_u8, vreinterpretq_u64_s64, vreinterpretq_u64_u8,
    vreinterpretq_u8_u32, vreinterpretq_u8_u64, vshlq_n_u64, vshrq_n_s64, vst1q_u8,
};

use crate::{schedule, RoundKey, Schedule, Unit, XtsKeys, BATCH_UNITS, ROUNDS, WIDTH};

/// Expands both halves of the master key into `keys`.
///
/// # Safety
/// The CPU must have the ARMv8 AES instructions.
#[target_feature(enable = "aes")]
pub(crate) unsafe fn set_key(data: &[u8; 32], tweak: &[u8; 32], keys: &mut XtsKeys) {
    // SubWord: with the word in all four columns ShiftRows changes nothing, so AESE with a
    // zero round key is SubBytes alone.
    let sub_word = |w: u32| {
        let v = vaeseq_u8(vreinterpretq_u8_u32(vdupq_n_u32(w)), vdupq_n_u8(0));
        vgetq_lane_u32::<0>(vreinterpretq_u32_u8(v))
    };
    schedule::expand(data, &mut keys.data_enc, sub_word);
    schedule::expand(tweak, &mut keys.tweak_enc, sub_word);
    schedule::invert(&keys.data_enc, &mut keys.data_dec, |from, to| {
        store(&mut to.0, vaesimcq_u8(load(&from.0)));
    });
}

/// XTS over whole data units, the first numbered `first_unit`.
///
/// # Safety
/// The CPU must have the ARMv8 AES instructions, and `keys` must hold an expanded key.
#[target_feature(enable = "aes")]
pub(crate) unsafe fn xts<const ENCRYPT: bool>(keys: &XtsKeys, units: &mut [Unit], first: u64) {
    let data = if ENCRYPT {
        &keys.data_enc
    } else {
        &keys.data_dec
    };
    let mut number = first;
    for batch in units.chunks_mut(BATCH_UNITS) {
        let mut initial: [uint8x16_t; BATCH_UNITS] = core::array::from_fn(|i| {
            let n = number.wrapping_add(i as u64);
            vreinterpretq_u8_u64(vcombine_u64(vcreate_u64(n), vcreate_u64(0)))
        });
        encrypt_blocks(&keys.tweak_enc, &mut initial);
        for (unit, &tweak) in batch.iter_mut().zip(initial.iter()) {
            let mut t = tweak;
            let (groups, _) = unit.as_chunks_mut::<{ 16 * WIDTH }>();
            for group in groups {
                let (blocks, _) = group.as_chunks_mut::<16>();
                let mut tweaks = [t; WIDTH];
                for i in 1..WIDTH {
                    tweaks[i] = mul_alpha(tweaks[i - 1]);
                }
                t = mul_alpha(tweaks[WIDTH - 1]);
                let mut x: [uint8x16_t; WIDTH] =
                    core::array::from_fn(|i| veorq_u8(load(&blocks[i]), tweaks[i]));
                if ENCRYPT {
                    encrypt_blocks(data, &mut x);
                } else {
                    decrypt_blocks(data, &mut x);
                }
                for ((block, x), tweak) in blocks.iter_mut().zip(x).zip(tweaks) {
                    store(block, veorq_u8(x, tweak));
                }
            }
        }
        crate::wipe(&mut initial, vdupq_n_u8(0));
        number = number.wrapping_add(batch.len() as u64);
    }
}

#[target_feature(enable = "aes")]
#[inline]
fn encrypt_blocks(schedule: &Schedule, x: &mut [uint8x16_t; WIDTH]) {
    for r in 0..ROUNDS - 2 {
        let k = round_key(schedule, r);
        for x in x.iter_mut() {
            *x = vaesmcq_u8(vaeseq_u8(*x, k));
        }
    }
    let k = round_key(schedule, ROUNDS - 2);
    let last = round_key(schedule, ROUNDS - 1);
    for x in x.iter_mut() {
        *x = veorq_u8(vaeseq_u8(*x, k), last);
    }
}

#[target_feature(enable = "aes")]
#[inline]
fn decrypt_blocks(schedule: &Schedule, x: &mut [uint8x16_t; WIDTH]) {
    for r in 0..ROUNDS - 2 {
        let k = round_key(schedule, r);
        for x in x.iter_mut() {
            *x = vaesimcq_u8(vaesdq_u8(*x, k));
        }
    }
    let k = round_key(schedule, ROUNDS - 2);
    let last = round_key(schedule, ROUNDS - 1);
    for x in x.iter_mut() {
        *x = veorq_u8(vaesdq_u8(*x, k), last);
    }
}

/// Multiplication by alpha in GF(2^128) on a register: both 64-bit lanes shift left by one,
/// the low lane's top bit carries into the high lane's bit 0 and the high lane's into the
/// reduction 0x87.
#[target_feature(enable = "neon")]
#[inline]
fn mul_alpha(t: uint8x16_t) -> uint8x16_t {
    let t = vreinterpretq_u64_u8(t);
    let tops = vreinterpretq_u64_s64(vshrq_n_s64::<63>(vreinterpretq_s64_u64(t)));
    let swapped = vextq_u64::<1>(tops, tops);
    let carries = vandq_u64(swapped, vcombine_u64(vcreate_u64(0x87), vcreate_u64(1)));
    vreinterpretq_u8_u64(veorq_u64(vshlq_n_u64::<1>(t), carries))
}

/// Round key `r`, read with a volatile load (see `x86.rs`).
#[inline(always)]
fn round_key(schedule: &Schedule, r: usize) -> uint8x16_t {
    let key: *const RoundKey = &schedule[r];
    // SAFETY: `key` points to a live, 16-byte aligned 16-byte round key; `uint8x16_t` has the
    // same size and any bit pattern is valid.
    unsafe { core::ptr::read_volatile(key.cast::<uint8x16_t>()) }
}

#[inline(always)]
fn load(block: &[u8; 16]) -> uint8x16_t {
    // SAFETY: `block` is 16 readable bytes; vld1q_u8 needs no alignment beyond a byte's.
    unsafe { vld1q_u8(block.as_ptr()) }
}

#[inline(always)]
fn store(block: &mut [u8; 16], v: uint8x16_t) {
    // SAFETY: `block` is 16 writable bytes.
    unsafe { vst1q_u8(block.as_mut_ptr(), v) }
}
