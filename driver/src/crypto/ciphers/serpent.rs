//! Serpent with a 256-bit key (Anderson, Biham, Knudsen, "Serpent: A Proposal for the Advanced
//! Encryption Standard", 1998), in the specification's bitslice mode.
//!
//! Owns: the 33 round keys of one Serpent key, and Serpent encryption and decryption of
//! independent blocks, sixteen at a time.
//! Never: knows about XTS, data units or cascades (the XTS layer does).
//!
//! Constant-time: yes. A block's state is four 32-bit words, each S-box is evaluated as a
//! boolean formula over whole words (bitslice mode), and nothing indexes memory or branches on a
//! key- or data-dependent value. The formulas are not written out by hand: each S-box's
//! algebraic normal form (XOR of AND-products of the input bits, after complementing the inputs
//! that make it shortest) is computed from the specification's table at compile time, so the
//! tables are the only source of truth (about 33 word operations per S-box, where hand-searched
//! circuits take about 18; enough for the speed asked).
//!
//! Sixteen blocks travel together in a group on the stack (256 bytes), stored word by word
//! (`g[w][l]` is word `w` of block `l`), and each round is one loop over the lanes, which the
//! compiler turns into SSE2 (x64) or NEON (ARM64) instructions four lanes at a time; no
//! intrinsics. Fewer lanes (four, as in the specification's bitslice picture) leave the compiler
//! nothing to vectorise: unrolled, the lanes become scalars it does not pack. A last group of
//! fewer than sixteen blocks is padded with zero lanes, computed and dropped.
//!
//! Byte order is VeraCrypt's (and RustCrypto's `serpent` crate's): the key is eight
//! little-endian words, key word 0 first; a block is four little-endian words, word 0 first.

use super::{BlockCipher256, BLOCK};
use zeroize::Zeroize;

/// Blocks processed together, one per lane of each state word.
const LANES: usize = 16;
/// Rounds of the cipher; it has one more round key than rounds.
const ROUNDS: usize = 32;
/// The key schedule's constant: the fractional part of the golden ratio.
const PHI: u32 = 0x9e37_79b9;

/// The eight S-boxes, specification section 2 (and its appendix), as 4-bit tables.
const SBOX: [[u8; 16]; 8] = [
    [3, 8, 15, 1, 10, 6, 5, 11, 14, 13, 4, 2, 7, 0, 9, 12],
    [15, 12, 2, 7, 9, 0, 5, 10, 1, 11, 14, 8, 6, 13, 3, 4],
    [8, 6, 7, 9, 3, 12, 10, 15, 13, 1, 14, 4, 0, 11, 5, 2],
    [0, 15, 11, 8, 12, 9, 6, 3, 13, 1, 2, 4, 10, 7, 5, 14],
    [1, 15, 8, 3, 12, 0, 11, 6, 2, 5, 4, 10, 9, 14, 7, 13],
    [15, 5, 2, 11, 4, 10, 9, 12, 0, 3, 14, 8, 13, 6, 7, 1],
    [7, 2, 12, 5, 8, 4, 6, 11, 14, 9, 1, 15, 13, 3, 10, 0],
    [1, 13, 15, 0, 14, 8, 2, 11, 7, 4, 12, 10, 9, 3, 5, 6],
];

/// A bitsliced S-box: complement the inputs in `flip`, then output bit `b` is the XOR of the
/// products of input bits named by the set bits of `terms[b]` (bit `m` of it stands for the
/// product of the inputs in the bits of `m`; `m == 0` is the constant 1).
#[derive(Clone, Copy)]
struct Formula {
    flip: u8,
    terms: [u16; 4],
}

/// Algebraic normal form of each output bit of `x -> table[x ^ flip]` (Moebius transform).
const fn normal_form(table: &[u8; 16], flip: u8) -> [u16; 4] {
    let mut terms = [0u16; 4];
    let mut b = 0;
    while b < 4 {
        let mut t = [0u8; 16];
        let mut x = 0;
        while x < 16 {
            t[x] = (table[x ^ flip as usize] >> b) & 1;
            x += 1;
        }
        let mut i = 0;
        while i < 4 {
            let mut x = 0;
            while x < 16 {
                if (x >> i) & 1 == 1 {
                    t[x] ^= t[x ^ (1 << i)];
                }
                x += 1;
            }
            i += 1;
        }
        let mut m = 0;
        while m < 16 {
            terms[b] |= (t[m] as u16) << m;
            m += 1;
        }
        b += 1;
    }
    terms
}

/// Word operations a formula costs: complements, products (shared between outputs), XORs.
const fn cost(flip: u8, terms: &[u16; 4]) -> u32 {
    let mut products = 0u16;
    let mut ops = flip.count_ones();
    let mut b = 0;
    while b < 4 {
        products |= terms[b];
        ops += terms[b].count_ones().saturating_sub(1);
        b += 1;
    }
    let mut m = 0;
    while m < 16 {
        if (products >> m) & 1 == 1 && (m as u32).count_ones() >= 2 {
            ops += 1;
        }
        m += 1;
    }
    ops
}

/// The cheapest formula for `table` over the 16 ways to complement its inputs.
const fn formula(table: &[u8; 16]) -> Formula {
    let mut best = Formula {
        flip: 0,
        terms: normal_form(table, 0),
    };
    let mut flip = 1;
    while flip < 16 {
        let terms = normal_form(table, flip);
        if cost(flip, &terms) < cost(best.flip, &best.terms) {
            best = Formula { flip, terms };
        }
        flip += 1;
    }
    best
}

const fn inverse(table: &[u8; 16]) -> [u8; 16] {
    let mut inv = [0u8; 16];
    let mut x = 0;
    while x < 16 {
        inv[table[x] as usize] = x as u8;
        x += 1;
    }
    inv
}

/// Formulas 0..8 are the S-boxes S0..S7, 8..16 their inverses.
const FORMULAS: [Formula; 16] = {
    let mut f = [Formula {
        flip: 0,
        terms: [0; 4],
    }; 16];
    let mut i = 0;
    while i < 8 {
        f[i] = formula(&SBOX[i]);
        f[8 + i] = formula(&inverse(&SBOX[i]));
        i += 1;
    }
    f
};

/// One block's state: the specification's X0..X3.
type Block = [u32; 4];
/// The states of [`LANES`] blocks, word by word: `x[w][l]` is word `w` of block `l`, so each
/// step below is one loop over the lanes that the compiler turns into vector instructions.
type Group = [[u32; LANES]; 4];

/// Applies formula `F` (an S-box or its inverse) to every bit position of one block's words.
/// Written without loops: every choice below is a constant, so what is left after compiling is
/// the formula's ANDs, XORs and NOTs, and the lane loops around it stay simple to vectorise.
#[inline]
fn sbox<const F: usize>(x: &mut Block) {
    let f = const { FORMULAS[F] };
    let flip = |i: usize| if (f.flip >> i) & 1 == 1 { u32::MAX } else { 0 };
    let (a, b, c, d) = (
        x[0] ^ flip(0),
        x[1] ^ flip(1),
        x[2] ^ flip(2),
        x[3] ^ flip(3),
    );
    // The products of the inputs, named by their bits (the ones no output uses are dropped by
    // the compiler, the rest are shared between the outputs).
    let (ab, ac, bc, ad, bd, cd) = (a & b, a & c, b & c, a & d, b & d, c & d);
    let (abc, abd, acd, bcd) = (ab & c, ab & d, ac & d, bc & d);
    let abcd = ab & cd;
    let products = [
        u32::MAX,
        a,
        b,
        ab,
        c,
        ac,
        bc,
        abc,
        d,
        ad,
        bd,
        abd,
        cd,
        acd,
        bcd,
        abcd,
    ];
    let output = |terms: u16| {
        let term = |m: usize| {
            if (terms >> m) & 1 == 1 {
                products[m]
            } else {
                0
            }
        };
        term(0)
            ^ term(1)
            ^ term(2)
            ^ term(3)
            ^ term(4)
            ^ term(5)
            ^ term(6)
            ^ term(7)
            ^ term(8)
            ^ term(9)
            ^ term(10)
            ^ term(11)
            ^ term(12)
            ^ term(13)
            ^ term(14)
            ^ term(15)
    };
    *x = [
        output(f.terms[0]),
        output(f.terms[1]),
        output(f.terms[2]),
        output(f.terms[3]),
    ];
}

/// The linear transformation LT (specification section 2, bitslice mode).
#[inline]
fn transform(x: &mut Block) {
    let x0 = x[0].rotate_left(13);
    let x2 = x[2].rotate_left(3);
    let x1 = (x[1] ^ x0 ^ x2).rotate_left(1);
    let x3 = (x[3] ^ x2 ^ (x0 << 3)).rotate_left(7);
    let x0 = (x0 ^ x1 ^ x3).rotate_left(5);
    let x2 = (x2 ^ x3 ^ (x1 << 7)).rotate_left(22);
    *x = [x0, x1, x2, x3];
}

/// The inverse of [`transform`].
#[inline]
fn untransform(x: &mut Block) {
    let x2 = x[2].rotate_right(22) ^ x[3] ^ (x[1] << 7);
    let x0 = x[0].rotate_right(5) ^ x[1] ^ x[3];
    let x3 = x[3].rotate_right(7) ^ x2 ^ (x0 << 3);
    let x1 = x[1].rotate_right(1) ^ x0 ^ x2;
    *x = [x0.rotate_right(13), x1, x2.rotate_right(3), x3];
}

#[inline]
fn lane(g: &Group, l: usize) -> Block {
    [g[0][l], g[1][l], g[2][l], g[3][l]]
}

#[inline]
fn set_lane(g: &mut Group, l: usize, x: &Block) {
    g[0][l] = x[0];
    g[1][l] = x[1];
    g[2][l] = x[2];
    g[3][l] = x[3];
}

#[inline]
fn xor(x: &mut Block, key: &Block) {
    x[0] ^= key[0];
    x[1] ^= key[1];
    x[2] ^= key[2];
    x[3] ^= key[3];
}

/// One round on every lane: key addition, S-box `F`, then LT; the last round (`LAST`) adds
/// the final round key `last` instead of LT.
/// Not inlined, so that the vector registers it saves (Windows x64 preserves xmm6-xmm15) and
/// its spills are not added to the frame that holds the group: each frame stays small.
#[inline(never)]
fn encrypt_round<const F: usize, const LAST: bool>(g: &mut Group, key: &Block, last: &Block) {
    for l in 0..LANES {
        let mut x = lane(g, l);
        xor(&mut x, key);
        sbox::<F>(&mut x);
        if LAST {
            xor(&mut x, last);
        } else {
            transform(&mut x);
        }
        set_lane(g, l, &x);
    }
}

/// The inverse of [`encrypt_round`] on every lane (`F` names the inverse S-box).
#[inline(never)]
fn decrypt_round<const F: usize, const LAST: bool>(g: &mut Group, key: &Block, last: &Block) {
    for l in 0..LANES {
        let mut x = lane(g, l);
        if LAST {
            xor(&mut x, last);
        } else {
            untransform(&mut x);
        }
        sbox::<F>(&mut x);
        xor(&mut x, key);
        set_lane(g, l, &x);
    }
}

/// Applies S-box `index mod 8` to one 128-bit word of the key schedule (bitslice mode).
fn key_sbox(index: usize, x: &mut Block) {
    match index % 8 {
        0 => sbox::<0>(x),
        1 => sbox::<1>(x),
        2 => sbox::<2>(x),
        3 => sbox::<3>(x),
        4 => sbox::<4>(x),
        5 => sbox::<5>(x),
        6 => sbox::<6>(x),
        _ => sbox::<7>(x),
    }
}

/// Loads up to [`LANES`] blocks into a group; missing lanes stay zero (computed, never stored).
#[inline]
fn load(blocks: &[[u8; BLOCK]], g: &mut Group) {
    if blocks.len() < LANES {
        *g = [[0; LANES]; 4];
    }
    for (l, block) in blocks.iter().enumerate().take(LANES) {
        for (w, word) in g.iter_mut().enumerate() {
            word[l] = u32::from_le_bytes([
                block[4 * w],
                block[4 * w + 1],
                block[4 * w + 2],
                block[4 * w + 3],
            ]);
        }
    }
}

#[inline]
fn store(g: &Group, blocks: &mut [[u8; BLOCK]]) {
    for (l, block) in blocks.iter_mut().enumerate().take(LANES) {
        for (w, word) in g.iter().enumerate() {
            block[4 * w..4 * w + 4].copy_from_slice(&word[l].to_le_bytes());
        }
    }
}

/// A Serpent key schedule; all zeros is the unkeyed value.
#[derive(bytemuck::Zeroable)]
pub struct Serpent {
    /// Round keys K0..K31 (specification section 2), each four words.
    keys: [[u32; 4]; ROUNDS],
    /// Round key K32, added after the last round's S-box.
    last: [u32; 4],
}

impl Serpent {
    /// The unkeyed value (all zeros); key it with [`BlockCipher256::set_key`].
    pub const fn empty() -> Self {
        Self {
            keys: [[0; 4]; ROUNDS],
            last: [0; 4],
        }
    }

    fn encrypt_group(&self, g: &mut Group) {
        let last = &self.last;
        for (i, k) in self.keys.chunks_exact(8).enumerate() {
            encrypt_round::<0, false>(g, &k[0], last);
            encrypt_round::<1, false>(g, &k[1], last);
            encrypt_round::<2, false>(g, &k[2], last);
            encrypt_round::<3, false>(g, &k[3], last);
            encrypt_round::<4, false>(g, &k[4], last);
            encrypt_round::<5, false>(g, &k[5], last);
            encrypt_round::<6, false>(g, &k[6], last);
            if i < ROUNDS / 8 - 1 {
                encrypt_round::<7, false>(g, &k[7], last);
            } else {
                encrypt_round::<7, true>(g, &k[7], last);
            }
        }
    }

    fn decrypt_group(&self, g: &mut Group) {
        let last = &self.last;
        for (i, k) in self.keys.chunks_exact(8).rev().enumerate() {
            if i == 0 {
                decrypt_round::<15, true>(g, &k[7], last);
            } else {
                decrypt_round::<15, false>(g, &k[7], last);
            }
            decrypt_round::<14, false>(g, &k[6], last);
            decrypt_round::<13, false>(g, &k[5], last);
            decrypt_round::<12, false>(g, &k[4], last);
            decrypt_round::<11, false>(g, &k[3], last);
            decrypt_round::<10, false>(g, &k[2], last);
            decrypt_round::<9, false>(g, &k[1], last);
            decrypt_round::<8, false>(g, &k[0], last);
        }
    }
}

impl Default for Serpent {
    fn default() -> Self {
        Self::empty()
    }
}

impl BlockCipher256 for Serpent {
    fn set_key(&mut self, key: &[u8; 32]) {
        // The prekeys w_i = (w_{i-8} ^ w_{i-5} ^ w_{i-3} ^ w_{i-1} ^ PHI ^ i) <<< 11, written
        // straight into the schedule; `window` holds the last eight (w_{-8}..w_{-1}: the key).
        let mut window = [0u32; 8];
        for (word, bytes) in window.iter_mut().zip(key.chunks_exact(4)) {
            *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        for i in 0..4 * (ROUNDS + 1) {
            let w = (window[i % 8]
                ^ window[(i + 3) % 8]
                ^ window[(i + 5) % 8]
                ^ window[(i + 7) % 8]
                ^ PHI
                ^ i as u32)
                .rotate_left(11);
            window[i % 8] = w;
            match self.keys.get_mut(i / 4) {
                Some(k) => k[i % 4] = w,
                None => self.last[i % 4] = w,
            }
        }
        // Round key K_i is S_{(3 - i) mod 8} of prekeys 4i..4i+3, bitslice mode.
        for (i, k) in self.keys.iter_mut().chain([&mut self.last]).enumerate() {
            key_sbox(ROUNDS + 3 - i, k);
        }
        window.zeroize();
    }

    fn encrypt_blocks(&self, blocks: &mut [[u8; BLOCK]]) {
        let mut g = [[0; LANES]; 4];
        for group in blocks.chunks_mut(LANES) {
            load(group, &mut g);
            self.encrypt_group(&mut g);
            store(&g, group);
        }
        // The last group's state (the final output, or the round states of a padded group)
        // does not stay on the thread's stack.
        g.zeroize();
    }

    fn decrypt_blocks(&self, blocks: &mut [[u8; BLOCK]]) {
        let mut g = [[0; LANES]; 4];
        for group in blocks.chunks_mut(LANES) {
            load(group, &mut g);
            self.decrypt_group(&mut g);
            store(&g, group);
        }
        // The last group's state (the final output, or the round states of a padded group)
        // does not stay on the thread's stack.
        g.zeroize();
    }

    fn clear(&mut self) {
        self.keys.zeroize();
        self.last.zeroize();
    }

    fn schedule_words_left(&self) -> usize {
        self.keys
            .iter()
            .flatten()
            .chain(&self.last)
            .filter(|w| **w != 0)
            .count()
    }
}

impl Drop for Serpent {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::{boxed::Box, vec};
    use cipher::KeyInit;
    use proptest::prelude::*;

    fn keyed(key: &[u8; 32]) -> Box<Serpent> {
        let mut c: Box<Serpent> = bytemuck::allocation::try_zeroed_box().unwrap();
        c.set_key(key);
        c
    }

    use super::super::hex;

    /// 256-bit-key vectors. NESSIE's verified Serpent vectors (Serpent-256-128.verified
    /// .test-vectors, "Set 1, vector# 0" and "# 1": one key bit set, plaintext zero; NESSIE
    /// writes bytes in the order VeraCrypt and RustCrypto read them), and the vector VeraCrypt's
    /// own self-test checks (its Tests.c, "Serpent ECB test vectors").
    const VECTORS: [(&str, &str, &str); 3] = [
        (
            "8000000000000000000000000000000000000000000000000000000000000000",
            "00000000000000000000000000000000",
            "a223aa1288463c0e2be38ebd825616c0",
        ),
        (
            "4000000000000000000000000000000000000000000000000000000000000000",
            "00000000000000000000000000000000",
            "eae1d405570174df7df2f9966d509159",
        ),
        (
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "000102030405060708090a0b0c0d0e0f",
            "de269ff833e432b85b2e88d2701ce75c",
        ),
    ];

    #[test]
    fn serpent_known_answers_encrypt_and_decrypt() {
        for (key, plain, expected) in VECTORS {
            let c = keyed(&hex(key));
            let mut blocks = [hex::<16>(plain)];
            c.encrypt_blocks(&mut blocks);
            assert_eq!(blocks[0], hex::<16>(expected), "encrypt, key {key}");
            c.decrypt_blocks(&mut blocks);
            assert_eq!(blocks[0], hex::<16>(plain), "decrypt, key {key}");
        }
    }

    #[test]
    fn serpent_known_answer_in_every_lane_of_a_group() {
        let (key, plain, expected) = VECTORS[2];
        let c = keyed(&hex(key));
        for n in 1..=9 {
            let mut blocks = vec![hex::<16>(plain); n];
            c.encrypt_blocks(&mut blocks);
            assert!(
                blocks.iter().all(|b| *b == hex::<16>(expected)),
                "{n} blocks"
            );
            c.decrypt_blocks(&mut blocks);
            assert!(blocks.iter().all(|b| *b == hex::<16>(plain)), "{n} blocks");
        }
    }

    /// Every S-box formula, on all 16 inputs at once (bit position v of the words holds
    /// input v), gives the specification's table and its inverse.
    #[test]
    fn serpent_formulas_reproduce_the_tables() {
        let mut all_inputs: Block = [0; 4];
        for v in 0..16 {
            for (i, word) in all_inputs.iter_mut().enumerate() {
                *word |= ((v >> i) & 1) << v;
            }
        }
        let check = |name: &str, out: Block, table: &[u8; 16]| {
            for (v, want) in table.iter().enumerate() {
                let got = (0..4).fold(0, |acc, b| acc | ((out[b] >> v) & 1) << b);
                assert_eq!(got, u32::from(*want), "{name}({v})");
            }
        };
        let inverses: [fn(&mut Block); 8] = [
            sbox::<8>, sbox::<9>, sbox::<10>, sbox::<11>, sbox::<12>, sbox::<13>, sbox::<14>,
            sbox::<15>,
        ];
        for (i, table) in SBOX.iter().enumerate() {
            let mut x = all_inputs;
            key_sbox(i, &mut x);
            check(&std::format!("S{i}"), x, table);
            let mut y = all_inputs;
            inverses[i](&mut y);
            check(&std::format!("InvS{i}"), y, &inverse(table));
        }
    }

    #[test]
    fn r3_serpent_clear_wipes_the_schedule_and_rekeying_works() {
        let (key, plain, expected) = VECTORS[2];
        let mut c = keyed(&hex(key));
        assert!(c.schedule_words_left() > 0);
        c.clear();
        assert_eq!(c.schedule_words_left(), 0);
        c.set_key(&hex(key));
        let mut blocks = [hex::<16>(plain)];
        c.encrypt_blocks(&mut blocks);
        assert_eq!(blocks[0], hex::<16>(expected));
        assert_eq!(Serpent::default().schedule_words_left(), 0);
        assert_eq!(Serpent::empty().schedule_words_left(), 0);
    }

    /// Block-level speed, 4 KiB batches (see `speed_mb_s`).
    #[test]
    #[ignore = "a measurement: run in release with --ignored --nocapture"]
    fn serpent_speed_block_level() {
        let (enc, dec) = super::super::speed_mb_s(&*keyed(&[7; 32]));
        std::println!("Serpent, 4 KiB batches: encrypt {enc:.0} MB/s, decrypt {dec:.0} MB/s");
    }

    proptest! {
        #[test]
        fn serpent_matches_rustcrypto_serpent(
            key in any::<[u8; 32]>(),
            blocks in proptest::collection::vec(any::<[u8; 16]>(), 1..=40),
        ) {
            let theirs = ::serpent::Serpent::new_from_slice(&key).unwrap();
            prop_assert_eq!(super::super::differs_from_reference(&*keyed(&key), &theirs, &blocks), None);
        }
    }
}
