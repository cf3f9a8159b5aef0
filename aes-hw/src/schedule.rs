//! AES-256 key expansion (FIPS-197 §5.2), shared by both architectures: only SubWord differs
//! (each runs it on its AES instruction, constant time, no table). The words are read from and
//! written to the caller's schedule directly, so no copy of a round key is kept anywhere else.

use crate::{RoundKey, Schedule};

/// The word at index `i` (0..60) of a schedule, little-endian as AES lays its bytes out.
#[inline(always)]
fn word(schedule: &Schedule, i: usize) -> u32 {
    let key = &schedule[i / 4].0;
    let at = (i % 4) * 4;
    u32::from_le_bytes([key[at], key[at + 1], key[at + 2], key[at + 3]])
}

#[inline(always)]
fn set_word(schedule: &mut Schedule, i: usize, w: u32) {
    let at = (i % 4) * 4;
    schedule[i / 4].0[at..at + 4].copy_from_slice(&w.to_le_bytes());
}

/// Expands `key` into `schedule`; `sub_word` applies the AES S-box to each byte of a word.
#[inline(always)]
pub(crate) fn expand(key: &[u8; 32], schedule: &mut Schedule, sub_word: impl Fn(u32) -> u32) {
    for (round_key, half) in schedule.iter_mut().zip(key.chunks_exact(16)) {
        round_key.0.copy_from_slice(half);
    }
    let mut rcon = 1u32;
    for i in 8..4 * crate::ROUNDS {
        let prev = word(schedule, i - 1);
        let t = match i % 8 {
            // RotWord is a rotation by one byte; the round constant goes into the first byte.
            0 => {
                let t = sub_word(prev.rotate_right(8)) ^ rcon;
                rcon <<= 1;
                t
            }
            4 => sub_word(prev),
            _ => prev,
        };
        set_word(schedule, i, word(schedule, i - 8) ^ t);
    }
}

/// The round keys of the equivalent inverse cipher: the encryption schedule reversed, with
/// InvMixColumns (`inv_mix`, writing its result into the destination key) applied to every
/// round key but the outer two.
#[inline(always)]
pub(crate) fn invert(
    enc: &Schedule,
    dec: &mut Schedule,
    inv_mix: impl Fn(&RoundKey, &mut RoundKey),
) {
    let last = crate::ROUNDS - 1;
    dec[0].0 = enc[last].0;
    dec[last].0 = enc[0].0;
    for i in 1..last {
        inv_mix(&enc[last - i], &mut dec[i]);
    }
}
