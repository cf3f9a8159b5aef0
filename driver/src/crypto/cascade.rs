//! The volume cipher: XTS over any of VeraCrypt's algorithms, a single cipher or a cascade.
//!
//! Layout and order are VeraCrypt's: the master key area holds every cipher's primary (data)
//! key in order, then every cipher's secondary (tweak) key ([`Algorithm::stage_keys`]); data
//! is encrypted by one full XTS pass per cipher, first to last in [`Algorithm::ciphers`]'
//! order, and decrypted last to first. Each pass uses 512-byte data units and the absolute
//! unit numbers of the buffer, as for AES alone.
//!
//! AES, alone or as a stage of a cascade, runs on [`XtsCipher`] (the CPU's AES instructions
//! where it has them). AES alone is exactly [`XtsCipher`]'s path (no extra work per call).
//! Every other cipher runs through [`BlockCipher256`]: for each data unit the 32 block tweaks
//! are computed (the unit's initial tweak from one batched call on the tweak key per eight
//! units, then multiplication by alpha), XORed over the unit's blocks, the 32 blocks go
//! through one `encrypt_blocks` call, and the tweaks are XORed again. The tweaks of one unit
//! (512 bytes) and the batch's initial tweaks (128 bytes) are this pass's only stack, and are
//! wiped when the pass returns. A cascade runs its passes over 4 KiB pieces of the buffer in
//! turn, so a piece stays in the cache between its passes.
//!
//! Key schedules of the other ciphers live in blocks of their own, allocated zeroed in place
//! ([`bytemuck::allocation::try_zeroed_box`], after the allocation-failure injection, W6) and
//! keyed there ([`BlockCipher256::set_key`]): no schedule is built on a stack (W5, W13).
//! [`VolumeCipher::clear`] wipes every stage's schedule in place (R3).

use alloc::boxed::Box;
use zeroize::Zeroize;

use super::algorithm::{Algorithm, BlockAlg, AES, MAX_CIPHERS};
use super::ciphers::{BlockCipher256, Camellia256, Kuznyechik, Serpent, Twofish, BLOCK};
use super::xts::{mul_alpha, XtsCipher, DATA_UNIT};
use crate::Status;

const BLOCKS_PER_UNIT: usize = DATA_UNIT / BLOCK;
/// Data units whose initial tweaks are one call on the tweak key.
const BATCH_UNITS: usize = 8;
/// Bytes a cascade runs all its passes over before the next piece.
const PIECE: usize = BATCH_UNITS * DATA_UNIT;

/// A data key and a tweak key of one cipher, in their block.
type Pair<C> = Box<[C; 2]>;

/// One non-AES stage's schedules (`None`: the stage is AES, on [`VolumeCipher`]'s AES cipher,
/// or there is no such stage).
enum Stage {
    None,
    Serpent(Pair<Serpent>),
    Twofish(Pair<Twofish>),
    Camellia(Pair<Camellia256>),
    Kuznyechik(Pair<Kuznyechik>),
}

/// The XTS cipher of a volume: its algorithm and every stage's keys.
pub struct VolumeCipher {
    algorithm: Algorithm,
    /// The AES stage's keys (empty when the algorithm has no AES).
    aes: XtsCipher,
    /// The other stages' keys, by position in encryption order.
    stages: [Stage; MAX_CIPHERS],
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Encrypt,
    Decrypt,
}

impl VolumeCipher {
    /// A cipher that holds no key: placed in its final block, then keyed there with
    /// [`VolumeCipher::set_key`].
    pub const fn empty() -> Self {
        VolumeCipher {
            algorithm: AES,
            aes: XtsCipher::empty(),
            stages: [Stage::None, Stage::None, Stage::None],
        }
    }

    /// A keyed cipher (user mode: tests, vcctl, vcbench).
    ///
    /// # Panics
    /// When `key` is not `algorithm`'s key length or a schedule's block cannot be allocated.
    pub fn new(algorithm: Algorithm, key: &[u8]) -> Self {
        let mut cipher = Self::empty();
        if cipher.set_key(algorithm, key).is_err() {
            panic!("a key of the algorithm's length, and memory for its schedules");
        }
        cipher
    }

    /// Keys this cipher in place for `algorithm` from its master key area `key` (exactly
    /// [`Algorithm::key_len`] bytes, else STATUS_INVALID_PARAMETER). The other ciphers'
    /// schedules are allocated zeroed and keyed where they live: STATUS_INSUFFICIENT_RESOURCES
    /// when a block cannot be allocated (W6; the cipher then holds no key).
    pub fn set_key(&mut self, algorithm: Algorithm, key: &[u8]) -> Result<(), Status> {
        self.release();
        if key.len() != algorithm.key_len() {
            return Err(Status::InvalidParameter);
        }
        self.algorithm = algorithm;
        let keyed = self.key_stages(key);
        if keyed.is_err() {
            self.release();
        }
        keyed
    }

    fn key_stages(&mut self, key: &[u8]) -> Result<(), Status> {
        let algorithm = self.algorithm;
        for (i, (cipher, stage)) in algorithm
            .ciphers()
            .iter()
            .zip(self.stages.iter_mut())
            .enumerate()
        {
            let (data, tweak) = algorithm
                .stage_keys(key, i)
                .ok_or(Status::InvalidParameter)?;
            *stage = match cipher {
                BlockAlg::Aes => {
                    self.aes.set_keys(data, tweak)?;
                    Stage::None
                }
                BlockAlg::Serpent => Stage::Serpent(pair(data, tweak)?),
                BlockAlg::Twofish => Stage::Twofish(pair(data, tweak)?),
                BlockAlg::Camellia => Stage::Camellia(pair(data, tweak)?),
                BlockAlg::Kuznyechik => Stage::Kuznyechik(pair(data, tweak)?),
            };
        }
        Ok(())
    }

    /// The algorithm this cipher was keyed for.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// Which implementation runs: AES alone names [`XtsCipher::path`] (`aes-ni`, `armv8-aes`,
    /// `aes-crate`); any other algorithm is `cascade` (its AES stage, if any, on that path).
    pub fn path(&self) -> &'static str {
        match self.algorithm == AES {
            true => self.aes.path(),
            false => "cascade",
        }
    }

    /// The AES cipher when the algorithm is AES alone (the wide path and the detached
    /// decryption run only then); `None` otherwise.
    pub fn aes_alone(&self) -> Option<&XtsCipher> {
        (self.algorithm == AES).then_some(&self.aes)
    }

    /// The hardware AES keys when the algorithm is AES alone on the AES instructions (the
    /// wide path's keys); `None` otherwise.
    pub fn hardware(&self) -> Option<&vcdirect_aes_hw::XtsKeys> {
        self.aes_alone()?.hardware()
    }

    /// Encrypts `buf` in place; its first data unit has the absolute number `first_unit`.
    /// `buf.len()` must be a multiple of [`DATA_UNIT`].
    pub fn encrypt(&self, buf: &mut [u8], first_unit: u64) {
        self.run(buf, first_unit, Direction::Encrypt);
    }

    /// Decrypts `buf` in place (see [`VolumeCipher::encrypt`]).
    pub fn decrypt(&self, buf: &mut [u8], first_unit: u64) {
        self.run(buf, first_unit, Direction::Decrypt);
    }

    fn run(&self, buf: &mut [u8], first_unit: u64, dir: Direction) {
        if let Some(aes) = self.aes_alone() {
            match dir {
                Direction::Encrypt => aes.encrypt(buf, first_unit),
                Direction::Decrypt => aes.decrypt(buf, first_unit),
            }
            return;
        }
        // Invariant, not input: every caller passes whole data units (see `XtsCipher`).
        assert!(
            buf.len().is_multiple_of(DATA_UNIT),
            "XTS buffers are whole data units"
        );
        let ciphers = self.algorithm.ciphers();
        let cascade_wrong = crate::faults::is_on(crate::faults::Fault::CascadeDecryptForward);
        for (i, piece) in buf.chunks_mut(PIECE).enumerate() {
            let unit = first_unit.wrapping_add((i * BATCH_UNITS) as u64);
            match (dir, cascade_wrong) {
                (Direction::Encrypt, _) | (Direction::Decrypt, true) => {
                    for stage in 0..ciphers.len() {
                        self.pass(stage, piece, unit, dir);
                    }
                }
                (Direction::Decrypt, false) => {
                    for stage in (0..ciphers.len()).rev() {
                        self.pass(stage, piece, unit, dir);
                    }
                }
            }
        }
    }

    /// One cipher's XTS pass over `buf` (whole units from `unit`).
    fn pass(&self, stage: usize, buf: &mut [u8], unit: u64, dir: Direction) {
        let Some(stage) = self.stages.get(stage) else {
            return;
        };
        match stage {
            Stage::None => match dir {
                Direction::Encrypt => self.aes.encrypt(buf, unit),
                Direction::Decrypt => self.aes.decrypt(buf, unit),
            },
            Stage::Serpent(keys) => xts(keys, buf, unit, dir),
            Stage::Twofish(keys) => xts(keys, buf, unit, dir),
            Stage::Camellia(keys) => xts(keys, buf, unit, dir),
            Stage::Kuznyechik(keys) => xts(keys, buf, unit, dir),
        }
    }

    /// Wipes every stage's schedule in place (the blocks stay, wiped, until the cipher is
    /// dropped or keyed again): no key is left afterwards.
    pub fn clear(&mut self) {
        self.aes.clear();
        if crate::faults::is_on(crate::faults::Fault::R3CascadeStagesUnwiped) {
            return;
        }
        for stage in self.stages.iter_mut() {
            match stage {
                Stage::None => {}
                Stage::Serpent(keys) => keys.iter_mut().for_each(BlockCipher256::clear),
                Stage::Twofish(keys) => keys.iter_mut().for_each(BlockCipher256::clear),
                Stage::Camellia(keys) => keys.iter_mut().for_each(BlockCipher256::clear),
                Stage::Kuznyechik(keys) => keys.iter_mut().for_each(BlockCipher256::clear),
            }
        }
    }

    /// Wipes and releases every schedule (each schedule's drop wipes it again).
    fn release(&mut self) {
        self.clear();
        self.stages = [Stage::None, Stage::None, Stage::None];
    }

    /// Round keys of the AES stage still set (of [`vcdirect_aes_hw::XtsKeys::ROUND_KEYS`];
    /// see [`XtsCipher::round_keys_left`]). 0 after [`VolumeCipher::clear`].
    pub fn round_keys_left(&self) -> usize {
        self.aes.round_keys_left()
    }

    /// Words (of 32 bits) of the other stages' schedules that are not zero, read in place.
    /// 0 after [`VolumeCipher::clear`].
    pub fn schedule_words_left(&self) -> usize {
        self.stages
            .iter()
            .map(|stage| match stage {
                Stage::None => 0,
                Stage::Serpent(keys) => words_left(keys),
                Stage::Twofish(keys) => words_left(keys),
                Stage::Camellia(keys) => words_left(keys),
                Stage::Kuznyechik(keys) => words_left(keys),
            })
            .sum()
    }

    /// What is left of every stage's key: [`VolumeCipher::round_keys_left`] plus
    /// [`VolumeCipher::schedule_words_left`]. 0 after [`VolumeCipher::clear`].
    pub fn key_material_left(&self) -> usize {
        self.round_keys_left() + self.schedule_words_left()
    }
}

impl Drop for VolumeCipher {
    fn drop(&mut self) {
        self.clear();
    }
}

fn words_left<C: BlockCipher256>(keys: &[C; 2]) -> usize {
    keys.iter().map(BlockCipher256::schedule_words_left).sum()
}

/// A data and a tweak schedule of `C` in a zeroed block allocated in place, keyed there.
fn pair<C: BlockCipher256 + bytemuck::Zeroable>(
    data: &[u8; 32],
    tweak: &[u8; 32],
) -> Result<Pair<C>, Status> {
    if crate::faults::allocation_fails() {
        return Err(Status::InsufficientResources);
    }
    let mut keys: Pair<C> =
        bytemuck::allocation::try_zeroed_box().map_err(|()| Status::InsufficientResources)?;
    keys[0].set_key(data);
    keys[1].set_key(tweak);
    Ok(keys)
}

/// One XTS pass of `keys` (data key, tweak key) over the whole units of `buf`, the first
/// numbered `first_unit`. Not inlined: each cipher's pass has its own frame (its 640 bytes of
/// tweaks), so the caller's frame does not hold one per cipher (W13's stack budgets).
#[inline(never)]
fn xts<C: BlockCipher256>(keys: &[C; 2], buf: &mut [u8], first_unit: u64, dir: Direction) {
    let [data, tweak] = keys;
    let (units, _) = buf.as_chunks_mut::<DATA_UNIT>();
    let mut initial = [[0u8; BLOCK]; BATCH_UNITS];
    let mut tweaks = [[0u8; BLOCK]; BLOCKS_PER_UNIT];
    let mut unit = first_unit;
    for batch in units.chunks_mut(BATCH_UNITS) {
        let initial = &mut initial[..batch.len()];
        for (i, t) in initial.iter_mut().enumerate() {
            // The data-unit number as a little-endian u64, zero-padded to 16 bytes.
            let (number, zeros) = t.split_at_mut(8);
            number.copy_from_slice(&unit.wrapping_add(i as u64).to_le_bytes());
            zeros.fill(0);
        }
        tweak.encrypt_blocks(initial);
        for (bytes, first) in batch.iter_mut().zip(initial.iter()) {
            let mut t = u128::from_le_bytes(*first);
            for slot in tweaks.iter_mut() {
                *slot = t.to_le_bytes();
                t = mul_alpha(t);
            }
            let (blocks, _) = bytes.as_chunks_mut::<BLOCK>();
            xor(blocks, &tweaks);
            match dir {
                Direction::Encrypt => data.encrypt_blocks(blocks),
                Direction::Decrypt => data.decrypt_blocks(blocks),
            }
            xor(blocks, &tweaks);
        }
        unit = unit.wrapping_add(batch.len() as u64);
    }
    // Values derived from the tweak key.
    initial.zeroize();
    tweaks.zeroize();
}

#[inline(always)]
fn xor(blocks: &mut [[u8; BLOCK]], tweaks: &[[u8; BLOCK]; BLOCKS_PER_UNIT]) {
    for (b, t) in blocks.iter_mut().zip(tweaks.iter()) {
        *b = (u128::from_ne_bytes(*b) ^ u128::from_ne_bytes(*t)).to_ne_bytes();
    }
}
