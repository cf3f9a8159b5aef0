//! AES-NI on XMM registers (x86_64): SSE2 and AES-NI only, legacy-encoded.
//!
//! Shape of [`xts`]: the initial tweaks of up to 8 data units are one 8-wide pass on the tweak
//! key; then each unit's 32 blocks go through the data key 8 at a time, their tweaks doubled
//! in registers (never stored as scalars), each block XORed with its tweak on the way in and
//! out while it is still in a register. The rounds are a block of assembly that reads each
//! round key from the schedule into one scratch register, zeroed at the block's end: no
//! round key is ever written to memory outside the schedule's own block (while the block runs,
//! an interrupt or a context switch may save that register like any other).

use core::arch::x86_64::{
    __m128i, _mm_add_epi32, _mm_aesenclast_si128, _mm_aesimc_si128, _mm_and_si128,
    _mm_cvtsi128_si32, _mm_loadu_si128, _mm_set1_epi32, _mm_set_epi32, _mm_set_epi64x,
    _mm_setzero_si128, _mm_shuffle_epi32, _mm_srai_epi32, _mm_storeu_si128, _mm_xor_si128,
};

use crate::{schedule, RoundKey, Schedule, Unit, XtsKeys, BATCH_UNITS, ROUNDS, WIDTH};

/// One round over the 8 blocks: round key at byte `$at` of the schedule into `{k}`, then
/// `$op` on every block.
macro_rules! round {
    ($at:literal, $op:literal) => {
        concat!(
            "movdqa {k}, xmmword ptr [{s} + ",
            $at,
            "]\n",
            $op,
            " {x0}, {k}\n",
            $op,
            " {x1}, {k}\n",
            $op,
            " {x2}, {k}\n",
            $op,
            " {x3}, {k}\n",
            $op,
            " {x4}, {k}\n",
            $op,
            " {x5}, {k}\n",
            $op,
            " {x6}, {k}\n",
            $op,
            " {x7}, {k}\n",
        )
    };
}

/// A round as [`round`], followed by one tweak step: `{t}` stored at byte `$at` of the next
/// group's tweaks, then doubled (multiplied by alpha, as [`mul_alpha`] does).
macro_rules! round_and_tweak {
    ($key:literal, $op:literal, $at:literal) => {
        concat!(
            round!($key, $op),
            "movdqa xmmword ptr [{n} + ",
            $at,
            "], {t}\n",
            "pshufd {c}, {t}, 0x93\n",
            "psrad {c}, 31\n",
            "pand {c}, {m}\n",
            "paddd {t}, {t}\n",
            "pxor {t}, {c}\n",
        )
    };
}

/// All 14 rounds of AES-256 over the 8 blocks `$x` (already XORed with their tweaks) with
/// the schedule `$schedule`, computing the next group's 8 tweaks from `$t` into `$next` on the
/// way; `$t` ends as the tweak after them.
///
/// In assembly for two reasons. A round key only ever sits in one scratch register (`{k}`):
/// compiled from intrinsics, the register allocator kept round keys in registers across the
/// loop and spilled some to the stack, a copy of the key schedule this crate must not make.
/// And the tweak arithmetic sits between the AES instructions that hide its latency; placed
/// after them by the compiler it cost about 15 % (measured at 4 KiB).
macro_rules! xts_rounds {
    ($schedule:expr, $x:ident, $t:ident, $next:ident, $mid:literal, $last:literal) => {{
        let [x0, x1, x2, x3, x4, x5, x6, x7] = $x;
        let s: *const RoundKey = $schedule.as_ptr();
        let n: *mut __m128i = $next.as_mut_ptr();
        // SAFETY: `s` points to a live schedule of 15 round keys, 16-byte aligned (`RoundKey`
        // is `align(16)`), so every aligned load at offsets 0..=224 reads inside it; `n`
        // points to 8 writable, aligned `__m128i` (offsets 0..=112). The block touches no
        // other memory and only the listed registers; the macro's one user, `group`, requires
        // AES-NI of its caller.
        unsafe {
            core::arch::asm!(
                "pxor {x0}, xmmword ptr [{s}]", "pxor {x1}, xmmword ptr [{s}]",
                "pxor {x2}, xmmword ptr [{s}]", "pxor {x3}, xmmword ptr [{s}]",
                "pxor {x4}, xmmword ptr [{s}]", "pxor {x5}, xmmword ptr [{s}]",
                "pxor {x6}, xmmword ptr [{s}]", "pxor {x7}, xmmword ptr [{s}]",
                round_and_tweak!("16", $mid, "0"), round_and_tweak!("32", $mid, "16"),
                round_and_tweak!("48", $mid, "32"), round_and_tweak!("64", $mid, "48"),
                round_and_tweak!("80", $mid, "64"), round_and_tweak!("96", $mid, "80"),
                round_and_tweak!("112", $mid, "96"), round_and_tweak!("128", $mid, "112"),
                round!("144", $mid), round!("160", $mid), round!("176", $mid),
                round!("192", $mid), round!("208", $mid),
                round!("224", $last),
                // The scratch register would keep the last round key after the block.
                "pxor {k}, {k}",
                s = in(reg) s,
                n = in(reg) n,
                m = in(xmm_reg) _mm_set_epi32(1, 1, 1, 0x87),
                t = inout(xmm_reg) $t,
                k = out(xmm_reg) _,
                c = out(xmm_reg) _,
                x0 = inout(xmm_reg) x0 => $x[0],
                x1 = inout(xmm_reg) x1 => $x[1],
                x2 = inout(xmm_reg) x2 => $x[2],
                x3 = inout(xmm_reg) x3 => $x[3],
                x4 = inout(xmm_reg) x4 => $x[4],
                x5 = inout(xmm_reg) x5 => $x[5],
                x6 = inout(xmm_reg) x6 => $x[6],
                x7 = inout(xmm_reg) x7 => $x[7],
                options(nostack, preserves_flags),
            );
        }
    }};
}

/// Expands both halves of the master key into `keys`.
///
/// # Safety
/// The CPU must have AES-NI.
#[target_feature(enable = "aes")]
pub(crate) unsafe fn set_key(data: &[u8; 32], tweak: &[u8; 32], keys: &mut XtsKeys) {
    // SubWord: with the word in all four columns ShiftRows changes nothing, so the last round
    // with a zero round key is SubBytes alone.
    let sub_word = |w: u32| {
        let v = _mm_aesenclast_si128(_mm_set1_epi32(w as i32), _mm_setzero_si128());
        _mm_cvtsi128_si32(v) as u32
    };
    schedule::expand(data, &mut keys.data_enc, sub_word);
    schedule::expand(tweak, &mut keys.tweak_enc, sub_word);
    schedule::invert(&keys.data_enc, &mut keys.data_dec, |from, to| {
        store(&mut to.0, _mm_aesimc_si128(load(&from.0)));
    });
}

/// XTS over whole data units, the first numbered `first_unit`.
///
/// # Safety
/// The CPU must have AES-NI, and `keys` must hold an expanded key.
#[target_feature(enable = "aes")]
pub(crate) unsafe fn xts<const ENCRYPT: bool>(keys: &XtsKeys, units: &mut [Unit], first: u64) {
    let data = if ENCRYPT {
        &keys.data_enc
    } else {
        &keys.data_dec
    };
    let mut number = first;
    for batch in units.chunks_mut(BATCH_UNITS) {
        // The unit number, little-endian in the low 8 bytes, encrypted with the tweak key.
        let mut initial: [__m128i; BATCH_UNITS] =
            core::array::from_fn(|i| _mm_set_epi64x(0, number.wrapping_add(i as u64) as i64));
        aes_blocks(&keys.tweak_enc, &mut initial);
        // `now`: the tweaks of the group being processed; the rounds of each group write the
        // next group's into `next` (from `t`, its first tweak), between the AES instructions.
        let mut now = [initial[0]; WIDTH];
        for i in 1..WIDTH {
            now[i] = mul_alpha(now[i - 1]);
        }
        let mut next = [_mm_setzero_si128(); WIDTH];
        let mut t = mul_alpha(now[WIDTH - 1]);
        for (u, unit) in batch.iter_mut().enumerate() {
            let (groups, _) = unit.as_chunks_mut::<{ 16 * WIDTH }>();
            // Two groups per step, so the tweak arrays trade roles in place (swapping them
            // after every group cost 10-17 % on an AMD EPYC without VAES).
            let (pairs, _) = groups.as_chunks_mut::<2>();
            let last = pairs.len() - 1;
            for (p, [even, odd]) in pairs.iter_mut().enumerate() {
                // SAFETY: `xts`'s contract: the CPU has AES-NI.
                unsafe { group::<ENCRYPT>(data, even, &now, &mut next, &mut t) };
                if p == last {
                    // The group after `odd` is the next unit's first: its own initial tweak.
                    t = initial.get(u + 1).copied().unwrap_or(_mm_setzero_si128());
                }
                // SAFETY: as above.
                unsafe { group::<ENCRYPT>(data, odd, &next, &mut now, &mut t) };
            }
        }
        for tweaks in [&mut initial, &mut now, &mut next] {
            crate::wipe(tweaks, _mm_setzero_si128());
        }
        number = number.wrapping_add(batch.len() as u64);
    }
}

/// One group of 8 blocks: XORed with their tweaks `now`, through the rounds, XORed again;
/// the rounds write the next group's tweaks, from `t`, into `next`.
///
/// Always inlined into [`xts`], whose wipe then covers every tweak it handles: a frame of its
/// own would keep copies of tweaks (values derived from the tweak key) that nothing wipes. A
/// `#[target_feature]` function may not be `inline(always)`, so this one has none (the XOR is
/// SSE2, which every x86_64 CPU has). scripts/check-sys-image.py checks that `xts` calls
/// nothing in the x64 images.
///
/// # Safety
/// The CPU must have AES-NI (the assembly's instructions).
#[inline(always)]
unsafe fn group<const ENCRYPT: bool>(
    data: &Schedule,
    bytes: &mut [u8; 16 * WIDTH],
    now: &[__m128i; WIDTH],
    next: &mut [__m128i; WIDTH],
    t: &mut __m128i,
) {
    let (blocks, _) = bytes.as_chunks_mut::<16>();
    let mut x: [__m128i; WIDTH] = core::array::from_fn(|i| xor(load(&blocks[i]), now[i]));
    let mut tw = *t;
    if ENCRYPT {
        xts_rounds!(data, x, tw, next, "aesenc", "aesenclast");
    } else {
        xts_rounds!(data, x, tw, next, "aesdec", "aesdeclast");
    }
    *t = tw;
    for ((block, x), tweak) in blocks.iter_mut().zip(x).zip(now) {
        store(block, xor(x, *tweak));
    }
}

/// AES-256 encryption of 8 independent blocks with `schedule` (the initial tweaks).
#[target_feature(enable = "aes")]
#[inline]
fn aes_blocks(schedule: &Schedule, x: &mut [__m128i; WIDTH]) {
    let [x0, x1, x2, x3, x4, x5, x6, x7] = *x;
    let s: *const RoundKey = schedule.as_ptr();
    // SAFETY: as in `xts_rounds`: `s` points to 15 aligned round keys, read only; only the
    // listed registers change.
    unsafe {
        core::arch::asm!(
            round!("0", "pxor"),
            round!("16", "aesenc"), round!("32", "aesenc"), round!("48", "aesenc"),
            round!("64", "aesenc"), round!("80", "aesenc"), round!("96", "aesenc"),
            round!("112", "aesenc"), round!("128", "aesenc"), round!("144", "aesenc"),
            round!("160", "aesenc"), round!("176", "aesenc"), round!("192", "aesenc"),
            round!("208", "aesenc"),
            round!("224", "aesenclast"),
            "pxor {k}, {k}",
            s = in(reg) s,
            k = out(xmm_reg) _,
            x0 = inout(xmm_reg) x0 => x[0],
            x1 = inout(xmm_reg) x1 => x[1],
            x2 = inout(xmm_reg) x2 => x[2],
            x3 = inout(xmm_reg) x3 => x[3],
            x4 = inout(xmm_reg) x4 => x[4],
            x5 = inout(xmm_reg) x5 => x[5],
            x6 = inout(xmm_reg) x6 => x[6],
            x7 = inout(xmm_reg) x7 => x[7],
            options(nostack, readonly, preserves_flags, pure),
        );
    }
}

// The assembly spells out 15 round keys and 8 blocks.
const _: () = assert!(ROUNDS == 15 && WIDTH == 8);
// A data unit is a whole, non-zero number of pairs of groups.
const _: () =
    assert!(crate::DATA_UNIT >= 2 * 16 * WIDTH && crate::DATA_UNIT.is_multiple_of(2 * 16 * WIDTH));

/// Multiplication by alpha in GF(2^128) (IEEE 1619 byte order) on a register: every 32-bit
/// lane shifts left by one, each lane's top bit carries into the next lane's bit 0, and the
/// top lane's into the reduction 0x87.
#[target_feature(enable = "sse2")]
#[inline]
pub(crate) fn mul_alpha(t: __m128i) -> __m128i {
    let tops = _mm_srai_epi32::<31>(t);
    let carries = _mm_and_si128(
        _mm_shuffle_epi32::<0x93>(tops),
        _mm_set_epi32(1, 1, 1, 0x87),
    );
    _mm_xor_si128(_mm_add_epi32(t, t), carries)
}

/// XOR of two registers, for [`group`], which cannot carry a target feature.
#[inline(always)]
fn xor(a: __m128i, b: __m128i) -> __m128i {
    // SAFETY: SSE2 is part of the x86_64 baseline: every CPU this code runs on has it.
    unsafe { _mm_xor_si128(a, b) }
}

#[inline(always)]
fn load(block: &[u8; 16]) -> __m128i {
    // SAFETY: `block` is 16 readable bytes; the unaligned load has no alignment requirement.
    unsafe { _mm_loadu_si128(block.as_ptr().cast()) }
}

#[inline(always)]
fn store(block: &mut [u8; 16], v: __m128i) {
    // SAFETY: `block` is 16 writable bytes; the unaligned store has no alignment requirement.
    unsafe { _mm_storeu_si128(block.as_mut_ptr().cast(), v) }
}
