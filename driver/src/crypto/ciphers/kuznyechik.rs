//! Kuznyechik (GOST R 34.12-2015, also RFC 7801), as VeraCrypt uses it: the standard's
//! vectors written most significant byte first are the bytes in memory, first byte first.
//!
//! Owns: the ten round keys of 128 bits (and, for decryption, eight of them passed through
//! L⁻¹), written in place by [`Kuznyechik::set_key`]; the LS tables (16 tables of 256
//! 128-bit entries, 64 KiB, that fold the S-box π and the linear map L into one lookup per
//! byte) and the tables for decryption (L⁻¹ after π⁻¹), both computed at compile time: 128
//! KiB of read-only data in the image.
//! Never: allocates; `set_key` wipes every local that held key material before it returns.
//!
//! Not constant-time: each round is sixteen lookups indexed by bytes of the state, as in
//! VeraCrypt's own C implementation. Four independent blocks go through the rounds together,
//! so the loads of one overlap the others' (four gave about 1.4 times the speed of two on
//! the development machine).
//!
//! A 128-bit vector lives as two `u64` read little-endian from its 16 bytes: byte j of the
//! block (the standard's a_(15-j)) is bits 8(j mod 8).. of word j / 8.

use super::{BlockCipher256, BLOCK};
use zeroize::Zeroize;

/// The S-box π (GOST R 34.12-2015 section 4.1.1; RFC 7801 section 4.1).
static PI: [u8; 256] = [
    0xfc, 0xee, 0xdd, 0x11, 0xcf, 0x6e, 0x31, 0x16, 0xfb, 0xc4, 0xfa, 0xda, 0x23, 0xc5, 0x04, 0x4d,
    0xe9, 0x77, 0xf0, 0xdb, 0x93, 0x2e, 0x99, 0xba, 0x17, 0x36, 0xf1, 0xbb, 0x14, 0xcd, 0x5f, 0xc1,
    0xf9, 0x18, 0x65, 0x5a, 0xe2, 0x5c, 0xef, 0x21, 0x81, 0x1c, 0x3c, 0x42, 0x8b, 0x01, 0x8e, 0x4f,
    0x05, 0x84, 0x02, 0xae, 0xe3, 0x6a, 0x8f, 0xa0, 0x06, 0x0b, 0xed, 0x98, 0x7f, 0xd4, 0xd3, 0x1f,
    0xeb, 0x34, 0x2c, 0x51, 0xea, 0xc8, 0x48, 0xab, 0xf2, 0x2a, 0x68, 0xa2, 0xfd, 0x3a, 0xce, 0xcc,
    0xb5, 0x70, 0x0e, 0x56, 0x08, 0x0c, 0x76, 0x12, 0xbf, 0x72, 0x13, 0x47, 0x9c, 0xb7, 0x5d, 0x87,
    0x15, 0xa1, 0x96, 0x29, 0x10, 0x7b, 0x9a, 0xc7, 0xf3, 0x91, 0x78, 0x6f, 0x9d, 0x9e, 0xb2, 0xb1,
    0x32, 0x75, 0x19, 0x3d, 0xff, 0x35, 0x8a, 0x7e, 0x6d, 0x54, 0xc6, 0x80, 0xc3, 0xbd, 0x0d, 0x57,
    0xdf, 0xf5, 0x24, 0xa9, 0x3e, 0xa8, 0x43, 0xc9, 0xd7, 0x79, 0xd6, 0xf6, 0x7c, 0x22, 0xb9, 0x03,
    0xe0, 0x0f, 0xec, 0xde, 0x7a, 0x94, 0xb0, 0xbc, 0xdc, 0xe8, 0x28, 0x50, 0x4e, 0x33, 0x0a, 0x4a,
    0xa7, 0x97, 0x60, 0x73, 0x1e, 0x00, 0x62, 0x44, 0x1a, 0xb8, 0x38, 0x82, 0x64, 0x9f, 0x26, 0x41,
    0xad, 0x45, 0x46, 0x92, 0x27, 0x5e, 0x55, 0x2f, 0x8c, 0xa3, 0xa5, 0x7d, 0x69, 0xd5, 0x95, 0x3b,
    0x07, 0x58, 0xb3, 0x40, 0x86, 0xac, 0x1d, 0xf7, 0x30, 0x37, 0x6b, 0xe4, 0x88, 0xd9, 0xe7, 0x89,
    0xe1, 0x1b, 0x83, 0x49, 0x4c, 0x3f, 0xf8, 0xfe, 0x8d, 0x53, 0xaa, 0x90, 0xca, 0xd8, 0x85, 0x61,
    0x20, 0x71, 0x67, 0xa4, 0x2d, 0x2b, 0x09, 0x5b, 0xcb, 0x9b, 0x25, 0xd0, 0xbe, 0xe5, 0x6c, 0x52,
    0x59, 0xa6, 0x74, 0xd2, 0xe6, 0xf4, 0xb4, 0xc0, 0xd1, 0x66, 0xaf, 0xc2, 0x39, 0x4b, 0x63, 0xb6,
];

/// π⁻¹.
static PI_INV: [u8; 256] = {
    let mut inv = [0u8; 256];
    let mut x = 0;
    while x < 256 {
        inv[PI[x] as usize] = x as u8;
        x += 1;
    }
    inv
};

/// The coefficients of the linear function l (section 4.1.2), for the block's bytes 0..15
/// (a15..a0): l = 148·a15 + 32·a14 + 133·a13 + ... + 148·a1 + 1·a0.
const L_COEFF: [u8; 16] = [
    148, 32, 133, 16, 194, 192, 1, 251, 1, 192, 194, 16, 133, 32, 148, 1,
];

/// Multiplication in GF(2^8) modulo p(x) = x^8 + x^7 + x^6 + x + 1.
const fn gf_mul(mut a: u8, mut b: u8) -> u8 {
    let mut p = 0;
    while b != 0 {
        if b & 1 != 0 {
            p ^= a;
        }
        let carry = a & 0x80 != 0;
        a <<= 1;
        if carry {
            a ^= 0xc3;
        }
        b >>= 1;
    }
    p
}

/// l over the bytes `v[from..]` then `v[..from]` (the vector rotated left by `from`).
const fn l_sum(v: &[u8; 16], from: usize) -> u8 {
    let mut acc = 0;
    let mut j = 0;
    while j < 16 {
        acc ^= gf_mul(L_COEFF[j], v[(from + j) % 16]);
        j += 1;
    }
    acc
}

/// L = R^16, with R(a15..a0) = l(a15..a0) || a15 || ... || a1: in memory, the bytes move
/// one place up and l enters at byte 0.
const fn l_forward(mut v: [u8; 16]) -> [u8; 16] {
    let mut round = 0;
    while round < 16 {
        let t = l_sum(&v, 0);
        let mut j = 15;
        while j > 0 {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[0] = t;
        round += 1;
    }
    v
}

/// L⁻¹ = (R⁻¹)^16, with R⁻¹(a15..a0) = a14 || ... || a0 || l(a14, ..., a0, a15): the bytes
/// move one place down and l of the rotated vector enters at byte 15.
const fn l_backward(mut v: [u8; 16]) -> [u8; 16] {
    let mut round = 0;
    while round < 16 {
        let t = l_sum(&v, 1);
        let mut j = 0;
        while j < 15 {
            v[j] = v[j + 1];
            j += 1;
        }
        v[15] = t;
        round += 1;
    }
    v
}

/// A vector's bytes as the two words the rounds work on.
const fn pack(v: &[u8; 16]) -> [u64; 2] {
    let mut w = [0u64; 2];
    let mut j = 0;
    while j < 16 {
        w[j / 8] |= (v[j] as u64) << (8 * (j % 8));
        j += 1;
    }
    w
}

/// One lookup table per byte position j: entry b is L(π(b) at byte j) for encryption, or
/// L⁻¹(π⁻¹(b) at byte j) for decryption. L and L⁻¹ are linear over GF(2^8), so an entry is
/// the image of the unit vector at byte j scaled by the S-box output.
type Tables = [[[u64; 2]; 256]; 16];

const fn tables(inverse: bool) -> Tables {
    let mut t = [[[0u64; 2]; 256]; 16];
    let mut j = 0;
    while j < 16 {
        let mut unit = [0u8; 16];
        unit[j] = 1;
        let column = if inverse {
            l_backward(unit)
        } else {
            l_forward(unit)
        };
        let mut b = 0;
        while b < 256 {
            let s = if inverse { PI_INV[b] } else { PI[b] };
            let mut v = [0u8; 16];
            let mut k = 0;
            while k < 16 {
                v[k] = gf_mul(s, column[k]);
                k += 1;
            }
            t[j][b] = pack(&v);
            b += 1;
        }
        j += 1;
    }
    t
}

/// LS: x -> L(S(x)).
static ENC: Tables = tables(false);
/// L⁻¹S⁻¹: x -> L⁻¹(S⁻¹(x)).
static DEC: Tables = tables(true);

/// The key schedule's constants C_i = L(Vec128(i)), i = 1..32 (section 4.3): i sits in the
/// least significant byte, byte 15 in memory.
static C: [[u64; 2]; 32] = {
    let mut c = [[0u64; 2]; 32];
    let mut i = 0;
    while i < 32 {
        let mut v = [0u8; 16];
        v[15] = i as u8 + 1;
        c[i] = pack(&l_forward(v));
        i += 1;
    }
    c
};

/// One table round: the XOR over the 16 byte positions of `t[j][byte j of x]`.
#[inline(always)]
fn table_round(x: &[u64; 2], t: &Tables) -> [u64; 2] {
    let mut y = [0u64; 2];
    for j in 0..16 {
        let e = &t[j][(x[j / 8] >> (8 * (j % 8))) as u8 as usize];
        y[0] ^= e[0];
        y[1] ^= e[1];
    }
    y
}

/// L⁻¹(x) by the decryption tables: DEC[j][π(b)] = L⁻¹(b at byte j).
#[inline(always)]
fn l_inverse(x: &[u64; 2]) -> [u64; 2] {
    let mut y = [0u64; 2];
    for j in 0..16 {
        let b = (x[j / 8] >> (8 * (j % 8))) as u8;
        let e = &DEC[j][PI[b as usize] as usize];
        y[0] ^= e[0];
        y[1] ^= e[1];
    }
    y
}

#[inline(always)]
fn xor(a: &[u64; 2], b: &[u64; 2]) -> [u64; 2] {
    [a[0] ^ b[0], a[1] ^ b[1]]
}

#[inline(always)]
fn load(block: &[u8; BLOCK]) -> [u64; 2] {
    let v = u128::from_le_bytes(*block);
    [v as u64, (v >> 64) as u64]
}

#[inline(always)]
fn store(block: &mut [u8; BLOCK], w: &[u64; 2]) {
    *block = ((u128::from(w[1]) << 64) | u128::from(w[0])).to_le_bytes();
}

/// Blocks that go through the rounds together.
const WIDTH: usize = 4;

/// Kuznyechik: the round keys for both directions, keyed in place.
///
/// All-zero bytes is the unkeyed value ([`Kuznyechik::empty`]).
#[derive(bytemuck::Zeroable)]
pub struct Kuznyechik {
    /// K1..K10.
    enc: [[u64; 2]; 10],
    /// L⁻¹(K2)..L⁻¹(K9): decryption works with the state passed through L⁻¹, so the keys
    /// it adds between table rounds are too.
    dec: [[u64; 2]; 8],
}

impl Kuznyechik {
    /// The unkeyed value (all zero).
    pub const fn empty() -> Self {
        Self {
            enc: [[0; 2]; 10],
            dec: [[0; 2]; 8],
        }
    }

    /// E = X[K10] LSX[K9] ... LSX[K1] over N blocks.
    #[inline(always)]
    fn encrypt_n<const N: usize>(&self, blocks: &mut [[u8; BLOCK]; N]) {
        let mut s = [[0u64; 2]; N];
        for i in 0..N {
            s[i] = load(&blocks[i]);
        }
        for k in &self.enc[..9] {
            for x in s.iter_mut() {
                *x = table_round(&xor(x, k), &ENC);
            }
        }
        for i in 0..N {
            store(&mut blocks[i], &xor(&s[i], &self.enc[9]));
        }
    }

    /// D = X[K1] S⁻¹L⁻¹X[K2] ... S⁻¹L⁻¹X[K10] over N blocks, carried as z = L⁻¹(state):
    /// z = L⁻¹(c ^ K10); nine times z = L⁻¹S⁻¹(z) ^ L⁻¹(K_i), i = 9..2; p = S⁻¹(z) ^ K1.
    #[inline(always)]
    fn decrypt_n<const N: usize>(&self, blocks: &mut [[u8; BLOCK]; N]) {
        let mut s = [[0u64; 2]; N];
        for i in 0..N {
            s[i] = l_inverse(&xor(&load(&blocks[i]), &self.enc[9]));
        }
        for k in self.dec.iter().rev() {
            for x in s.iter_mut() {
                *x = xor(&table_round(x, &DEC), k);
            }
        }
        for i in 0..N {
            let mut p = [0u64; 2];
            for j in 0..16 {
                let b = (s[i][j / 8] >> (8 * (j % 8))) as u8;
                p[j / 8] |= u64::from(PI_INV[usize::from(b)]) << (8 * (j % 8));
            }
            store(&mut blocks[i], &xor(&p, &self.enc[0]));
        }
    }
}

impl Default for Kuznyechik {
    fn default() -> Self {
        Self::empty()
    }
}

impl Drop for Kuznyechik {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Eight bytes read little-endian.
#[inline(always)]
fn le64(bytes: &[u8]) -> u64 {
    bytes.iter().rev().fold(0, |w, &b| (w << 8) | u64::from(b))
}

impl BlockCipher256 for Kuznyechik {
    fn set_key(&mut self, key: &[u8; 32]) {
        // K1 || K2 is the key (section 4.3).
        for (half, bytes) in key.chunks_exact(8).enumerate() {
            self.enc[half / 2][half % 2] = le64(bytes);
        }
        // (K_2i+1, K_2i+2) = F[C_8i] ... F[C_8i-7](K_2i-1, K_2i), with
        // F[k](a1, a0) = (LSX[k](a1) ^ a0, a1).
        let mut a1 = self.enc[0];
        let mut a0 = self.enc[1];
        for pair in 1..5 {
            for c in &C[8 * (pair - 1)..8 * pair] {
                let mut t = xor(&table_round(&xor(&a1, c), &ENC), &a0);
                a0 = a1;
                a1 = t;
                t.zeroize();
            }
            self.enc[2 * pair] = a1;
            self.enc[2 * pair + 1] = a0;
        }
        a1.zeroize();
        a0.zeroize();
        for (d, k) in self.dec.iter_mut().zip(&self.enc[1..9]) {
            *d = l_inverse(k);
        }
    }

    fn encrypt_blocks(&self, blocks: &mut [[u8; BLOCK]]) {
        let mut batches = blocks.chunks_exact_mut(WIDTH);
        for chunk in &mut batches {
            if let Some(batch) = chunk.first_chunk_mut::<WIDTH>() {
                self.encrypt_n::<WIDTH>(batch);
            }
        }
        for one in batches.into_remainder() {
            self.encrypt_n::<1>(core::array::from_mut(one));
        }
    }

    fn decrypt_blocks(&self, blocks: &mut [[u8; BLOCK]]) {
        let mut batches = blocks.chunks_exact_mut(WIDTH);
        for chunk in &mut batches {
            if let Some(batch) = chunk.first_chunk_mut::<WIDTH>() {
                self.decrypt_n::<WIDTH>(batch);
            }
        }
        for one in batches.into_remainder() {
            self.decrypt_n::<1>(core::array::from_mut(one));
        }
    }

    fn clear(&mut self) {
        self.enc.zeroize();
        self.dec.zeroize();
    }

    fn schedule_words_left(&self) -> usize {
        super::nonzero_halves(self.enc.iter().chain(self.dec.iter()).flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::boxed::Box;
    use alloc::vec;
    use kuznyechik::cipher::generic_array::GenericArray;
    use kuznyechik::cipher::KeyInit;
    use proptest::prelude::*;

    use super::super::hex;

    /// The key of GOST R 34.12-2015 Appendix A.1 (RFC 7801 section 5), written as there:
    /// most significant byte first, which is the byte order in memory.
    const KEY: &str = "8899aabbccddeeff0011223344556677 fedcba98765432100123456789abcdef";

    fn keyed(key: &[u8; 32]) -> Kuznyechik {
        let mut c = Kuznyechik::empty();
        c.set_key(key);
        c
    }

    /// Encrypts `pt` as one block and inside batches of 1..=5 copies (both interleave paths
    /// and the remainder), checks `ct`, and decrypts back.
    fn known_answer(key: &str, pt: &str, ct: &str) {
        let c = keyed(&hex(key));
        let (pt, ct) = (hex::<16>(pt), hex::<16>(ct));
        for n in 1..=5 {
            let mut blocks = vec![pt; n];
            c.encrypt_blocks(&mut blocks);
            assert!(blocks.iter().all(|b| *b == ct), "encrypt, batch of {n}");
            c.decrypt_blocks(&mut blocks);
            assert!(blocks.iter().all(|b| *b == pt), "decrypt, batch of {n}");
        }
    }

    /// GOST R 34.12-2015 Appendix A.1.4/A.1.5 (RFC 7801 sections 5.5 and 5.6).
    #[test]
    fn kuznyechik_known_answer_gost_r_34_12_2015_appendix_a1() {
        known_answer(
            KEY,
            "1122334455667700ffeeddccbbaa9988",
            "7f679d90bebc24305a468d42b9d4edcd",
        );
    }

    /// GOST R 34.13-2015 Appendix A.1.1 (ECB, the A.1 key): the three further blocks, which
    /// VeraCrypt's self-test (src/Common/Tests.c, `kuznyechik_vectors`) also checks.
    #[test]
    fn kuznyechik_known_answer_gost_r_34_13_2015_ecb_blocks() {
        for (pt, ct) in [
            (
                "00112233445566778899aabbcceeff0a",
                "b429912c6e0032f9285452d76718d08b",
            ),
            (
                "112233445566778899aabbcceeff0a00",
                "f0ca33549d247ceef3f5a5313bd4b157",
            ),
            (
                "2233445566778899aabbcceeff0a0011",
                "d0b09ccde830b9eb3a02c4c5aa8ada98",
            ),
        ] {
            known_answer(KEY, pt, ct);
        }
    }

    /// The compile-time L against the standard's worked examples (GOST R 34.12-2015
    /// Appendix A.1.3, RFC 7801 section 5.3), L⁻¹ undoing it, and C_1 (A.1.4, section 5.4).
    #[test]
    fn kuznyechik_linear_map_and_constants_match_the_standard_examples() {
        let a = hex::<16>("64a59400000000000000000000000000");
        let b = hex::<16>("d456584dd0e3e84cc3166e4b7fa2890d");
        assert_eq!(l_forward(a), b, "L(64a594..)");
        assert_eq!(l_backward(b), a, "L⁻¹ undoes L");
        assert_eq!(
            l_forward(b),
            hex::<16>("79d26221b87b584cd42fbc4ffea5de9a"),
            "L(d45658..)"
        );
        assert_eq!(
            C[0],
            pack(&hex::<16>("6ea276726c487ab85d27bd10dd849401")),
            "C_1"
        );
    }

    /// A value made the way the XTS layer makes it: zeroed in place on the heap, then keyed.
    #[test]
    fn kuznyechik_keys_in_a_zeroed_box() {
        let mut boxed: Box<Kuznyechik> =
            bytemuck::allocation::try_zeroed_box().expect("a zeroed box");
        assert_eq!(
            boxed.schedule_words_left(),
            0,
            "all-zero bytes is the empty value"
        );
        boxed.set_key(&[7; 32]);
        let reference = keyed(&[7; 32]);
        assert_eq!(boxed.enc, reference.enc);
        assert_eq!(boxed.dec, reference.dec);
    }

    /// R3: clear() leaves no schedule word; a cleared value keyed again works.
    #[test]
    fn r3_kuznyechik_clear_wipes_every_schedule_word_and_rekeys() {
        let key = hex::<32>(KEY);
        let mut c = keyed(&key);
        assert_eq!(
            c.schedule_words_left(),
            4 * 18,
            "every 32-bit word of this key's 18 round keys is non-zero"
        );
        c.clear();
        assert_eq!(c.schedule_words_left(), 0, "cleared");
        c.set_key(&key);
        let mut block = [hex::<16>("1122334455667700ffeeddccbbaa9988")];
        c.encrypt_blocks(&mut block);
        assert_eq!(block[0], hex::<16>("7f679d90bebc24305a468d42b9d4edcd"));
    }

    /// Block-level speed, 4 KiB batches (see `speed_mb_s`).
    #[test]
    #[ignore = "a measurement: run in release with --ignored --nocapture"]
    fn kuznyechik_speed_at_block_level() {
        let (enc, dec) = super::super::speed_mb_s(&keyed(&[0x3c; 32]));
        std::println!("Kuznyechik, 4 KiB batches: encrypt {enc:.0} MB/s, decrypt {dec:.0} MB/s");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Byte-identical to RustCrypto's kuznyechik 0.8 (vcctl's, so VeraCrypt's byte
        /// order) for random keys and batches of 1..=40 blocks, both directions.
        #[test]
        fn kuznyechik_matches_rustcrypto_kuznyechik_0_8(
            key in any::<[u8; 32]>(),
            blocks in proptest::collection::vec(any::<[u8; 16]>(), 1..=40),
        ) {
            let theirs = kuznyechik::Kuznyechik::new(GenericArray::from_slice(&key));
            prop_assert_eq!(super::super::differs_from_reference(&keyed(&key), &theirs, &blocks), None);
        }
    }
}
