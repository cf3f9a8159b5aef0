//! VAES on YMM registers (x86_64, AVX2 + VAES + VPCLMULQDQ): two blocks per instruction, 16
//! blocks in flight, for large buffers where the CPU has it.
//!
//! Only through a [`WideVectors`](crate::WideVectors) token: user mode may always use these
//! registers (the OS saves them), a Windows driver only between KeSaveExtendedProcessorState
//! and KeRestoreExtendedProcessorState (docs/review.md W13). The functions here are the only
//! ones of the crate with VEX-encoded instructions; the driver image's checker allows them
//! there and nowhere else, and checks that only the bracketing glue function reaches them.
//!
//! Shape: per batch of 16 data units, the 16 initial tweaks are one 8-register pass on the
//! tweak key (two units per register). Each unit is two groups of 16 blocks (8 registers, a
//! pair of consecutive blocks each), taken as a pair: the first group's tweaks come from the
//! unit's initial tweak by doubling (computed between the previous unit's second-group
//! rounds, inside their assembly, so their latency hides behind them), the second group's are
//! the first's times alpha^16, computed per 128-bit lane between the first group's AES
//! instructions (a 2-byte shift and a carry-less multiplication of the 16 bits shifted out by
//! 0x87). So the two tweak arrays trade roles without being copied, and the assembly makes
//! every group's tweaks straight into them (the initial tweaks, stored by compiled code, are
//! in two arrays of their own); all four are wiped at the end (W5; the image checker requires
//! the pass to call nothing). Round keys are broadcast from the schedule into
//! one scratch register inside the assembly, as on the XMM path.

use core::arch::x86_64::{
    __m128i, __m256i, _mm256_castsi256_si128, _mm256_loadu_si256, _mm256_set1_epi64x,
    _mm256_set_m128i, _mm256_storeu_si256, _mm256_xor_si256, _mm256_zeroall, _mm_set_epi32,
    _mm_set_epi64x,
};

use crate::{RoundKey, Unit, XtsKeys, DATA_UNIT};

/// The wide path's CPU check, made once: AES-NI, AVX2, VAES and VPCLMULQDQ (CPUID), and the
/// OS has enabled the SSE and AVX state (OSXSAVE, then XCR0 bits 1 and 2). Not `cpufeatures`:
/// it asks for the AVX-512 state before it reports VAES or VPCLMULQDQ, which would leave
/// the path off on every CPU that has them without AVX-512 (AMD Zen 3, Intel's client cores).
/// In the kernel the glue also asks which state the OS saves (RtlGetEnabledExtendedFeatures).
pub(crate) fn cpu_has_it() -> bool {
    use core::sync::atomic::{AtomicU8, Ordering};
    static KNOWN: AtomicU8 = AtomicU8::new(0);
    match KNOWN.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let yes = detect();
            KNOWN.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
            yes
        }
    }
}

fn detect() -> bool {
    use core::arch::x86_64::{__cpuid, __cpuid_count};
    let bit = |reg: u32, n: u32| reg & (1 << n) != 0;
    let basic = __cpuid(0);
    if basic.eax < 7 {
        return false;
    }
    let leaf1 = __cpuid(1);
    // AES-NI (ECX 25), PCLMULQDQ (1), OSXSAVE (27), AVX (28).
    if !(bit(leaf1.ecx, 25) && bit(leaf1.ecx, 1) && bit(leaf1.ecx, 27) && bit(leaf1.ecx, 28)) {
        return false;
    }
    // SAFETY: OSXSAVE is set, so XGETBV is enabled and reading XCR0 cannot fault.
    let xcr0 = unsafe { xcr0() };
    if xcr0 & 0b110 != 0b110 {
        return false;
    }
    let leaf7 = __cpuid_count(7, 0);
    // AVX2 (EBX 5), VAES (ECX 9), VPCLMULQDQ (ECX 10).
    bit(leaf7.ebx, 5) && bit(leaf7.ecx, 9) && bit(leaf7.ecx, 10)
}

/// XCR0, the state components the OS has enabled.
///
/// # Safety
/// CPUID must report OSXSAVE (else XGETBV faults).
#[target_feature(enable = "xsave")]
unsafe fn xcr0() -> u64 {
    // SAFETY: the caller checked OSXSAVE; this function's target feature provides XGETBV.
    unsafe { core::arch::x86_64::_xgetbv(0) }
}

/// Data units whose initial tweaks are one pass (two per register).
const BATCH: usize = 16;
/// Registers in flight, two blocks each.
const REGS: usize = 8;
/// Blocks per group: half a data unit.
const GROUP: usize = 2 * REGS;
const _: () = assert!(DATA_UNIT == 2 * GROUP * 16);

/// One round over the 8 registers: the round key at byte `$at` broadcast into `{k}`, then
/// `$op` on every register.
macro_rules! wide_round {
    ($at:literal, $op:literal) => {
        concat!(
            "vbroadcasti128 {k}, xmmword ptr [{s} + ",
            $at,
            "]\n",
            $op,
            " {x0}, {x0}, {k}\n",
            $op,
            " {x1}, {x1}, {k}\n",
            $op,
            " {x2}, {x2}, {k}\n",
            $op,
            " {x3}, {x3}, {k}\n",
            $op,
            " {x4}, {x4}, {k}\n",
            $op,
            " {x5}, {x5}, {k}\n",
            $op,
            " {x6}, {x6}, {k}\n",
            $op,
            " {x7}, {x7}, {k}\n",
        )
    };
}

/// A round as [`wide_round`], then one register of next tweaks: the pair at byte `$at` of
/// `{w}` times alpha^16 per lane, stored at the same byte of `{n}`.
macro_rules! wide_round_and_tweak {
    ($key:literal, $op:literal, $at:literal) => {
        concat!(
            wide_round!($key, $op),
            "vmovdqu {c}, ymmword ptr [{w} + ",
            $at,
            "]\n",
            "vpsrldq {d}, {c}, 14\n",
            "vpclmulqdq {d}, {d}, {p}, 0x00\n",
            "vpslldq {c}, {c}, 2\n",
            "vpxor {c}, {c}, {d}\n",
            "vmovdqu ymmword ptr [{n} + ",
            $at,
            "], {c}\n",
        )
    };
}

/// The 14 rounds over the 8 registers `$x` with `$schedule`, computing `$next` = `$now` times
/// alpha^16 (per 128-bit lane) between them. See `x86.rs` for why assembly.
macro_rules! wide_rounds {
    ($schedule:expr, $x:ident, $now:ident, $next:ident, $first:literal, $mid:literal, $last:literal) => {{
        let [x0, x1, x2, x3, x4, x5, x6, x7] = $x;
        let s: *const RoundKey = $schedule.as_ptr();
        let w: *const __m256i = $now.as_ptr();
        let n: *mut __m256i = $next.as_mut_ptr();
        // SAFETY: `s` points to a live schedule of 15 round keys (reads at offsets 0..=224);
        // `w` and `n` point to 8 live `__m256i` each (offsets 0..=224, unaligned accesses).
        // Only the listed registers change; the caller's target features guarantee AVX2,
        // VAES and VPCLMULQDQ, and its `WideVectors` token that the YMM state may be used.
        unsafe {
            core::arch::asm!(
                wide_round!("0", $first),
                wide_round_and_tweak!("16", $mid, "0"), wide_round_and_tweak!("32", $mid, "32"),
                wide_round_and_tweak!("48", $mid, "64"), wide_round_and_tweak!("64", $mid, "96"),
                wide_round_and_tweak!("80", $mid, "128"), wide_round_and_tweak!("96", $mid, "160"),
                wide_round_and_tweak!("112", $mid, "192"), wide_round_and_tweak!("128", $mid, "224"),
                wide_round!("144", $mid), wide_round!("160", $mid), wide_round!("176", $mid),
                wide_round!("192", $mid), wide_round!("208", $mid),
                wide_round!("224", $last),
                // The scratch register would keep the last round key after the block.
                "vpxor {k}, {k}, {k}",
                s = in(reg) s,
                w = in(reg) w,
                n = in(reg) n,
                p = in(ymm_reg) _mm256_set1_epi64x(0x87),
                k = out(ymm_reg) _,
                c = out(ymm_reg) _,
                d = out(ymm_reg) _,
                x0 = inout(ymm_reg) x0 => $x[0],
                x1 = inout(ymm_reg) x1 => $x[1],
                x2 = inout(ymm_reg) x2 => $x[2],
                x3 = inout(ymm_reg) x3 => $x[3],
                x4 = inout(ymm_reg) x4 => $x[4],
                x5 = inout(ymm_reg) x5 => $x[5],
                x6 = inout(ymm_reg) x6 => $x[6],
                x7 = inout(ymm_reg) x7 => $x[7],
                options(nostack, preserves_flags),
            );
        }
    }};
}

/// The 14 rounds over the 8 registers `$x` with `$schedule`, nothing else.
macro_rules! wide_rounds_plain {
    ($schedule:expr, $x:ident, $first:literal, $mid:literal, $last:literal) => {{
        let [x0, x1, x2, x3, x4, x5, x6, x7] = $x;
        let s: *const RoundKey = $schedule.as_ptr();
        // SAFETY: as in `wide_rounds`, without the tweak memory: `s` points to a live
        // schedule of 15 round keys, read only; only the listed registers change.
        unsafe {
            core::arch::asm!(
                wide_round!("0", $first),
                wide_round!("16", $mid), wide_round!("32", $mid), wide_round!("48", $mid),
                wide_round!("64", $mid), wide_round!("80", $mid), wide_round!("96", $mid),
                wide_round!("112", $mid), wide_round!("128", $mid), wide_round!("144", $mid),
                wide_round!("160", $mid), wide_round!("176", $mid), wide_round!("192", $mid),
                wide_round!("208", $mid),
                wide_round!("224", $last),
                // The scratch register would keep the last round key after the block.
                "vpxor {k}, {k}, {k}",
                s = in(reg) s,
                k = out(ymm_reg) _,
                x0 = inout(ymm_reg) x0 => $x[0],
                x1 = inout(ymm_reg) x1 => $x[1],
                x2 = inout(ymm_reg) x2 => $x[2],
                x3 = inout(ymm_reg) x3 => $x[3],
                x4 = inout(ymm_reg) x4 => $x[4],
                x5 = inout(ymm_reg) x5 => $x[5],
                x6 = inout(ymm_reg) x6 => $x[6],
                x7 = inout(ymm_reg) x7 => $x[7],
                options(nostack, readonly, preserves_flags, pure),
            );
        }
    }};
}

/// The first register of a unit's first-group tweaks: its initial tweak `{t}`, loaded from
/// `{tp}` (so that no copy of it is made outside the wiped arrays), and `{t}` times alpha (as
/// `x86.rs`'s `mul_alpha`, VEX-encoded) in its two lanes, stored at byte 0 of `{n}`.
macro_rules! first_pair {
    () => {
        concat!(
            "vmovdqu {t}, xmmword ptr [{tp}]\n",
            "vpshufd {c}, {t}, 0x93\n",
            "vpsrad {c}, {c}, 31\n",
            "vpand {c}, {c}, {m}\n",
            "vpaddd {e:x}, {t}, {t}\n",
            "vpxor {c}, {c}, {e:x}\n",
            "vinserti128 {r}, {t:y}, {c}, 1\n",
            "vmovdqu ymmword ptr [{n}], {r}\n",
        )
    };
}

/// The next register of those tweaks: `{r}` times alpha^2 per lane (each 64-bit half shifts
/// left by 2, the low half's top 2 bits carry into the high half, the high half's are reduced
/// by a carry-less multiplication with 0x87), stored at byte `$at` of `{n}`.
macro_rules! next_pair {
    ($at:literal) => {
        concat!(
            "vpsrlq {d}, {r}, 62\n",
            "vpsllq {r}, {r}, 2\n",
            "vpslldq {e}, {d}, 8\n",
            "vpsrldq {d}, {d}, 8\n",
            "vpclmulqdq {d}, {d}, {p}, 0x00\n",
            "vpxor {r}, {r}, {e}\n",
            "vpxor {r}, {r}, {d}\n",
            "vmovdqu ymmword ptr [{n} + ",
            $at,
            "], {r}\n",
        )
    };
}

/// The 14 rounds over the 8 registers `$x` with `$schedule`, writing into `$out` the 16
/// tweaks of the next unit's first group from its initial tweak at `$tp`, between them (so
/// that their latency hides behind the AES instructions).
macro_rules! wide_rounds_first_group {
    ($schedule:expr, $x:ident, $tp:expr, $out:ident, $first:literal, $mid:literal, $last:literal) => {{
        let [x0, x1, x2, x3, x4, x5, x6, x7] = $x;
        let s: *const RoundKey = $schedule.as_ptr();
        let tp: *const __m128i = $tp;
        let n: *mut __m256i = $out.as_mut_ptr();
        // SAFETY: `s` points to a live schedule of 15 round keys (reads at offsets 0..=224);
        // `tp` to a live `__m128i` (one unaligned read); `n` to 8 live `__m256i` (writes at
        // offsets 0..=224). Only the listed registers change; the caller's target features
        // and `WideVectors` token as in `wide_rounds`.
        unsafe {
            core::arch::asm!(
                wide_round!("0", $first),
                wide_round!("16", $mid), first_pair!(),
                wide_round!("32", $mid), next_pair!("32"),
                wide_round!("48", $mid), next_pair!("64"),
                wide_round!("64", $mid), next_pair!("96"),
                wide_round!("80", $mid), next_pair!("128"),
                wide_round!("96", $mid), next_pair!("160"),
                wide_round!("112", $mid), next_pair!("192"),
                wide_round!("128", $mid), next_pair!("224"),
                wide_round!("144", $mid), wide_round!("160", $mid), wide_round!("176", $mid),
                wide_round!("192", $mid), wide_round!("208", $mid),
                wide_round!("224", $last),
                // The scratch register would keep the last round key after the block.
                "vpxor {k}, {k}, {k}",
                s = in(reg) s,
                tp = in(reg) tp,
                n = in(reg) n,
                m = in(xmm_reg) _mm_set_epi32(1, 1, 1, 0x87),
                p = in(ymm_reg) _mm256_set1_epi64x(0x87),
                t = out(xmm_reg) _,
                k = out(ymm_reg) _,
                c = out(xmm_reg) _,
                r = out(ymm_reg) _,
                d = out(ymm_reg) _,
                e = out(ymm_reg) _,
                x0 = inout(ymm_reg) x0 => $x[0],
                x1 = inout(ymm_reg) x1 => $x[1],
                x2 = inout(ymm_reg) x2 => $x[2],
                x3 = inout(ymm_reg) x3 => $x[3],
                x4 = inout(ymm_reg) x4 => $x[4],
                x5 = inout(ymm_reg) x5 => $x[5],
                x6 = inout(ymm_reg) x6 => $x[6],
                x7 = inout(ymm_reg) x7 => $x[7],
                options(nostack, preserves_flags),
            );
        }
    }};
}

/// The 16 tweaks of a unit's first group from its initial tweak at `$tp`, two per register,
/// into `$out`: the same steps as between [`wide_rounds_first_group`]'s rounds, alone (for a
/// batch's first unit). In assembly so that no copy is made outside the wiped arrays.
macro_rules! first_group {
    ($tp:expr, $out:ident) => {{
        let tp: *const __m128i = $tp;
        let n: *mut __m256i = $out.as_mut_ptr();
        // SAFETY: `tp` points to a live `__m128i` (one unaligned read), `n` to 8 live
        // `__m256i` (writes at offsets 0..=224). Only the listed registers change; the
        // caller's target features and `WideVectors` token as in `wide_rounds`.
        unsafe {
            core::arch::asm!(
                first_pair!(),
                next_pair!("32"), next_pair!("64"), next_pair!("96"), next_pair!("128"),
                next_pair!("160"), next_pair!("192"), next_pair!("224"),
                tp = in(reg) tp,
                n = in(reg) n,
                m = in(xmm_reg) _mm_set_epi32(1, 1, 1, 0x87),
                p = in(ymm_reg) _mm256_set1_epi64x(0x87),
                t = out(xmm_reg) _,
                c = out(xmm_reg) _,
                r = out(ymm_reg) _,
                d = out(ymm_reg) _,
                e = out(ymm_reg) _,
                options(nostack, preserves_flags),
            );
        }
    }};
}

/// XTS over whole data units with VAES, the first numbered `first`.
///
/// # Safety
/// The CPU must have AES-NI, AVX2, VAES and VPCLMULQDQ, the thread must be allowed to use the
/// YMM registers (a `WideVectors` token), and `keys` must hold an expanded key.
#[target_feature(enable = "aes,avx2,vaes,vpclmulqdq")]
pub(crate) unsafe fn xts<const ENCRYPT: bool>(keys: &XtsKeys, units: &mut [Unit], first: u64) {
    let data = if ENCRYPT {
        &keys.data_enc
    } else {
        &keys.data_dec
    };
    let mut number = first;
    for batch in units.chunks_mut(BATCH) {
        // Two units' numbers per register, little-endian in each lane's low 8 bytes.
        let mut initial_pairs: [__m256i; REGS] = core::array::from_fn(|i| {
            let lo = number.wrapping_add(2 * i as u64);
            _mm256_set_m128i(
                _mm_set_epi64x(0, lo.wrapping_add(1) as i64),
                _mm_set_epi64x(0, lo as i64),
            )
        });
        wide_rounds_plain!(
            keys.tweak_enc,
            initial_pairs,
            "vpxor",
            "vaesenc",
            "vaesenclast"
        );
        let mut initial: [__m128i; BATCH] = core::array::from_fn(|u| lane(&initial_pairs, u));
        let mut now = [_mm256_set1_epi64x(0); REGS];
        first_group!(&initial[0], now);
        let mut next = [_mm256_set1_epi64x(0); REGS];
        for (u, unit) in batch.iter_mut().enumerate() {
            // A unit is two groups: the first's tweaks are in `now`, its rounds write the
            // second's into `next`, whose rounds write the next unit's first into `now`. The
            // arrays trade roles without being copied (as on the XMM path, `x86.rs`).
            let (groups, _) = unit.as_chunks_mut::<{ 16 * GROUP }>();
            let (both, _) = groups.as_chunks_mut::<2>();
            for [first_half, second_half] in both {
                let (pairs, _) = first_half.as_chunks_mut::<32>();
                let mut x: [__m256i; REGS] =
                    core::array::from_fn(|i| _mm256_xor_si256(load(&pairs[i]), now[i]));
                if ENCRYPT {
                    wide_rounds!(data, x, now, next, "vpxor", "vaesenc", "vaesenclast");
                } else {
                    wide_rounds!(data, x, now, next, "vpxor", "vaesdec", "vaesdeclast");
                }
                for ((pair, x), tweak) in pairs.iter_mut().zip(x).zip(&now) {
                    store(pair, _mm256_xor_si256(x, *tweak));
                }
                // The next unit's first group's tweaks, by doubling from its initial tweak,
                // between the second group's rounds.
                let (pairs, _) = second_half.as_chunks_mut::<32>();
                let mut x: [__m256i; REGS] =
                    core::array::from_fn(|i| _mm256_xor_si256(load(&pairs[i]), next[i]));
                // (The batch's last unit computes tweaks nobody uses; they are wiped.)
                let t: &__m128i = initial.get(u + 1).unwrap_or(&initial[0]);
                if ENCRYPT {
                    wide_rounds_first_group!(data, x, t, now, "vpxor", "vaesenc", "vaesenclast");
                } else {
                    wide_rounds_first_group!(data, x, t, now, "vpxor", "vaesdec", "vaesdeclast");
                }
                for ((pair, x), tweak) in pairs.iter_mut().zip(x).zip(&next) {
                    store(pair, _mm256_xor_si256(x, *tweak));
                }
            }
        }
        let zero = _mm256_set1_epi64x(0);
        for tweaks in [&mut initial_pairs, &mut now, &mut next] {
            crate::wipe(tweaks, zero);
        }
        crate::wipe(&mut initial, _mm256_castsi256_si128(zero));
        number = number.wrapping_add(batch.len() as u64);
    }
    // All of them, not only the upper halves: the last unit's block state (the ciphertext
    // XORed with a tweak) would stay in a low half until overwritten.
    _mm256_zeroall();
}

/// Tweak `u` (0..16) of the initial tweaks, two per register.
#[target_feature(enable = "avx2")]
#[inline]
fn lane(initial: &[__m256i; REGS], u: usize) -> __m128i {
    use core::arch::x86_64::_mm256_extracti128_si256;
    let v = initial[u / 2];
    if u.is_multiple_of(2) {
        _mm256_castsi256_si128(v)
    } else {
        _mm256_extracti128_si256::<1>(v)
    }
}

#[target_feature(enable = "avx")]
#[inline]
fn load(pair: &[u8; 32]) -> __m256i {
    // SAFETY: `pair` is 32 readable bytes; the unaligned load has no alignment requirement.
    unsafe { _mm256_loadu_si256(pair.as_ptr().cast()) }
}

#[target_feature(enable = "avx")]
#[inline]
fn store(pair: &mut [u8; 32], v: __m256i) {
    // SAFETY: `pair` is 32 writable bytes; as in `load`.
    unsafe { _mm256_storeu_si256(pair.as_mut_ptr().cast(), v) }
}
