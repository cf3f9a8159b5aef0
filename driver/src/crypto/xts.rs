//! The XTS-AES-256 data-unit cipher: the CPU's AES instructions where it has them, RustCrypto
//! `aes` where it does not.
//!
//! The hardware path is the `vcdirect-aes-hw` crate (AES-NI on XMM registers, ARMv8 AES): 8
//! blocks in flight, tweaks doubled in registers, round keys expanded in place in the block
//! that holds the cipher and read from there only. It runs on every x86_64 CPU with AES-NI and
//! every ARM64 CPU with the crypto extension (the ARM64 driver refuses to load without it).
//!
//! The portable path (no AES instructions, and [`XtsCipher::portable`] for comparisons) is the
//! batched form over `aes` 0.8: per batch of up to 8 data units, the 8 initial tweaks are one
//! `encrypt_blocks` call on the tweak key; then per unit, the 32 block tweaks follow by
//! multiplication with alpha and the 32 blocks are one call on the data key. The block
//! tweaks of a pass live on the stack of the thread that encrypts, a kernel worker's among
//! them, whose stack is budgeted (docs/review.md W13): 512 bytes for one unit.

use aes::{Aes256, Aes256Enc};
use alloc::vec::Vec;
use cipher::consts::U16;
use cipher::generic_array::GenericArray;
use cipher::typenum::Unsigned;
use cipher::{
    BlockBackend, BlockClosure, BlockDecrypt, BlockEncrypt, BlockSizeUser, KeyInit, ParBlocks,
};
use vcdirect_aes_hw::XtsKeys;

use crate::Status;

/// Bytes in one XTS data unit (VeraCrypt's ENCRYPTION_DATA_UNIT_SIZE).
pub const DATA_UNIT: usize = vcdirect_aes_hw::DATA_UNIT;
const BLOCKS_PER_UNIT: usize = DATA_UNIT / 16;
const BATCH_UNITS: usize = 8;
/// Data units per call on the data key (see the module's text for why not a whole batch): one,
/// so that the block tweaks on the stack stay at 512 bytes (the path runs only where the CPU
/// has no AES instructions, and shares the budgeted stacks of the dispatch and completion paths).
const PASS_UNITS: usize = 1;

/// The two AES-256 keys of XTS, data (primary) and tweak (secondary), in whichever form runs
/// on this CPU. Round keys are zeroized when dropped.
pub struct XtsCipher {
    /// The hardware path's round keys; empty where the CPU lacks the AES instructions.
    hw: XtsKeys,
    /// The portable path, only where `hw` is empty: in a block of its own (about 2 KiB), so
    /// that an empty cipher is small to place and a hardware one carries no dead weight.
    portable: Vec<Portable>,
}

/// The portable path's keys (`aes` with its `zeroize` feature zeroizes them when dropped).
struct Portable {
    data: Aes256,
    tweak: Aes256Enc,
}

impl XtsCipher {
    /// A cipher from VeraCrypt's master key layout: primary key in bytes 0..32, secondary
    /// (tweak) key in 32..64.
    ///
    /// # Panics
    /// When the portable path's block cannot be allocated (user mode; the engine keys its
    /// volume ciphers with the fallible [`XtsCipher::set_key`]).
    pub fn new(master: &[u8; 64]) -> Self {
        let mut cipher = Self::empty();
        // A plain message: `expect` would format the status with Debug, which pulls the
        // formatting machinery into the driver images' call graphs.
        if cipher.set_key(master).is_err() {
            panic!("no memory for the portable path's keys");
        }
        cipher
    }

    /// A cipher that holds no key yet: all zero, so it can be placed in its final block
    /// before [`XtsCipher::set_key`] writes the key there.
    pub const fn empty() -> Self {
        XtsCipher {
            hw: XtsKeys::new(),
            portable: Vec::new(),
        }
    }

    /// Sets the key in place. On the hardware path the round keys are expanded directly into
    /// this value's block, so no copy of them exists anywhere else; the portable path's `aes`
    /// constructors build by value (a CPU without AES instructions only), into a block
    /// allocated fallibly: STATUS_INSUFFICIENT_RESOURCES when it cannot be (W6).
    pub fn set_key(&mut self, master: &[u8; 64]) -> Result<(), Status> {
        let (data, tweak) = master.split_at(32);
        match (<&[u8; 32]>::try_from(data), <&[u8; 32]>::try_from(tweak)) {
            (Ok(data), Ok(tweak)) => self.set_keys(data, tweak),
            _ => Err(Status::InvalidParameter),
        }
    }

    /// Sets the data (primary) key and the tweak (secondary) key, given apart (a cascade's
    /// AES stage), in place, as [`XtsCipher::set_key`] does.
    pub fn set_keys(&mut self, data: &[u8; 32], tweak: &[u8; 32]) -> Result<(), Status> {
        self.portable = Vec::new();
        if !self.hw.set_keys(data, tweak) {
            self.portable = Portable::boxed(data, tweak)?;
        }
        Ok(())
    }

    /// The portable path even where the hardware one could run: for differential tests and
    /// for `vcbench crypto`'s comparison of the two.
    ///
    /// # Panics
    /// When its block cannot be allocated (user mode only).
    pub fn portable(master: &[u8; 64]) -> Self {
        XtsCipher {
            hw: XtsKeys::new(),
            portable: match Portable::boxed(
                master[..32].try_into().unwrap_or(&[0; 32]),
                master[32..].try_into().unwrap_or(&[0; 32]),
            ) {
                Ok(block) => block,
                Err(_) => panic!("no memory for the portable path's keys"),
            },
        }
    }

    /// Which implementation this cipher runs: `aes-ni`, `armv8-aes`, or `aes-crate` (the
    /// portable path, itself on AES-NI or in software as `aes` 0.8 decides).
    pub fn path(&self) -> &'static str {
        if self.hw.is_ready() {
            XtsKeys::instructions()
        } else {
            "aes-crate"
        }
    }

    /// Encrypts `buf` in place; its first data unit has the absolute number `first_unit`.
    /// `buf.len()` must be a multiple of [`DATA_UNIT`].
    pub fn encrypt(&self, buf: &mut [u8], first_unit: u64) {
        match self.portable.first() {
            None => self.hw.encrypt(buf, first_unit),
            Some(p) => p.process(buf, first_unit, Direction::Encrypt),
        }
    }

    /// Decrypts `buf` in place (see [`XtsCipher::encrypt`]).
    pub fn decrypt(&self, buf: &mut [u8], first_unit: u64) {
        match self.portable.first() {
            None => self.hw.decrypt(buf, first_unit),
            Some(p) => p.process(buf, first_unit, Direction::Decrypt),
        }
    }

    /// The hardware path's keys, which also run the wide (VAES) path; `None` on the
    /// portable path.
    pub fn hardware(&self) -> Option<&XtsKeys> {
        self.portable.is_empty().then_some(&self.hw)
    }

    /// Wipes the keys in place: the hardware schedule zeroized where it lives, the portable
    /// path's block dropped (`aes` zeroizes its keys when dropped). The cipher holds no key
    /// afterwards.
    pub fn clear(&mut self) {
        self.hw.clear();
        self.portable = Vec::new();
    }

    /// Round keys (of [`XtsKeys::ROUND_KEYS`]) this cipher still holds: those of the hardware
    /// schedule that are not zero, read in place, and all of them while the portable path's
    /// block is allocated (its layout is `aes`'s own). 0 after [`XtsCipher::clear`].
    pub fn round_keys_left(&self) -> usize {
        if self.portable.is_empty() {
            self.hw.round_keys_set()
        } else {
            XtsKeys::ROUND_KEYS
        }
    }
}

impl Portable {
    /// The keys in a block of their own (a vector of one), allocated fallibly (W6).
    ///
    /// W5: `aes` 0.8 has no in-place constructor: its key expansion works in local arrays and
    /// returns the schedules by value, so copies of the round keys are left in the frames of
    /// [`key_into`] and below. [`burn_stack`] runs next, from this same frame, and overwrites
    /// at least that much of the stack (VeraCrypt burns its stack copies the same way); its
    /// frame is as deep as `key_into`'s deepest path, which `scripts/check-sys.sh` checks in
    /// each driver image, so the burn adds nothing to the control path's stack.
    fn boxed(data: &[u8; 32], tweak: &[u8; 32]) -> Result<Vec<Self>, Status> {
        let mut block = crate::io::try_vec::<Portable>(1)?;
        key_into(&mut block, data, tweak);
        if !crate::faults::is_on(crate::faults::Fault::W5PortableKeysUnburnt) {
            burn_stack();
        }
        Ok(block)
    }

    fn new(data: &[u8; 32], tweak: &[u8; 32]) -> Self {
        Portable {
            data: Aes256::new(GenericArray::from_slice(data)),
            tweak: Aes256Enc::new(GenericArray::from_slice(tweak)),
        }
    }

    fn process(&self, buf: &mut [u8], first_unit: u64, dir: Direction) {
        // Invariant, not input: every caller passes whole data units (dispatch refuses a
        // request that is not a multiple of the volume's sector size, itself a multiple of
        // the data unit; segments and fragments are cut on data-unit boundaries).
        assert!(
            buf.len().is_multiple_of(DATA_UNIT),
            "XTS buffers are whole data units"
        );
        let mut initial = [0u128; BATCH_UNITS];
        let mut tweaks = [0u128; BLOCKS_PER_UNIT * PASS_UNITS];
        let mut unit = first_unit;
        for batch in buf.chunks_mut(DATA_UNIT * BATCH_UNITS) {
            let units = batch.len() / DATA_UNIT;
            let initial = &mut initial[..units];
            self.initial_tweaks(unit, initial);
            for (data, pass_initial) in batch
                .chunks_mut(DATA_UNIT * PASS_UNITS)
                .zip(initial.chunks(PASS_UNITS))
            {
                let tweaks = &mut tweaks[..pass_initial.len() * BLOCKS_PER_UNIT];
                expand_tweaks(pass_initial, tweaks);
                let pass = XtsPass { data, tweaks };
                match dir {
                    Direction::Encrypt => self.data.encrypt_with_backend(pass),
                    Direction::Decrypt => self.data.decrypt_with_backend(pass),
                }
            }
            unit = unit.wrapping_add(units as u64);
        }
    }

    /// The initial tweak of each of `out.len()` (at most 8) units from `first_unit` on: one
    /// call on the tweak key.
    fn initial_tweaks(&self, first_unit: u64, out: &mut [u128]) {
        let mut blocks = [GenericArray::<u8, U16>::default(); BATCH_UNITS];
        let blocks = &mut blocks[..out.len()];
        for (i, block) in blocks.iter_mut().enumerate() {
            // The data-unit number as a little-endian u64, zero-padded to 16 bytes.
            block[..8].copy_from_slice(&first_unit.wrapping_add(i as u64).to_le_bytes());
        }
        self.tweak.encrypt_blocks(blocks);
        for (tweak, block) in out.iter_mut().zip(blocks.iter()) {
            *tweak = u128::from_le_bytes((*block).into());
        }
    }
}

/// Builds the portable keys and moves them into `block`: every by-value copy of the round keys
/// lies in this call's frames, which [`burn_stack`] overwrites after it returned.
#[inline(never)]
fn key_into(block: &mut Vec<Portable>, data: &[u8; 32], tweak: &[u8; 32]) {
    block.push(Portable::new(data, tweak));
}

/// Bytes [`burn_stack`] overwrites below its caller. In the driver images (optimised) this is
/// `key_into`'s deepest path (x64 5,448 bytes, ARM64 2,880: the `aes` crate's key expansion; on
/// x64 it chooses AES-NI or its fixsliced software form at run time, both inlined into one
/// frame) plus 1 KiB for what an interrupt or a context switch at the keying's deepest point
/// stores below it (a KTRAP_FRAME of 0x190 bytes with the volatile registers, an ISR's pushes,
/// the switch frame with the non-volatile ones); `scripts/check-sys.sh` checks it in each
/// image. Unoptimised user-mode test builds of this crate make far larger frames; a kernel
/// build always burns the images' figure (16 KiB under unoptimised frames could reach a 24 KiB
/// kernel stack's guard page).
const BURN: usize = if cfg!(all(debug_assertions, not(feature = "kernel"))) {
    16 << 10
} else if cfg!(target_arch = "aarch64") {
    4 << 10
} else {
    6656
};

/// Overwrites `BURN` bytes (6.5 KiB; 4 KiB on ARM64) of the stack below the caller with zeros
/// (volatile writes, which the compiler may not remove): called after the portable path's
/// keying, where `key_into` left by-value copies of its keys. Registers are not cleared; the
/// next trap frame stores what they still hold.
#[inline(never)]
pub fn burn_stack() {
    let mut area = [0u8; BURN];
    zeroize::Zeroize::zeroize(&mut area);
    core::hint::black_box(&area);
}

/// Bytes [`burn_thread_stack`] overwrites: at least the deepest path of the driver's thread
/// bodies below their start routine plus 1 KiB for a trap frame and a context switch, which
/// `scripts/check-sys.sh` checks in each image (x64 5,080 bytes, ARM64 4,752, wine-host 6,120:
/// the last with 88 bytes to spare).
const THREAD_BURN: usize = 7 << 10;

/// Overwrites `THREAD_BURN` bytes (7 KiB) of the stack below the caller with zeros: the last
/// step of every system thread of the driver, so the round keys a cipher's rounds spilled to
/// that thread's stack, and the trap frames stored there, do not go back to the system with
/// the stack (a dead thread's stack is reused without being zeroed).
#[inline(never)]
pub fn burn_thread_stack() {
    let mut area = [0u8; THREAD_BURN];
    zeroize::Zeroize::zeroize(&mut area);
    core::hint::black_box(&area);
}

/// The tweak of every block of the units whose initial tweaks are `initial`.
fn expand_tweaks(initial: &[u128], tweaks: &mut [u128]) {
    for (&first, unit_tweaks) in initial.iter().zip(tweaks.chunks_exact_mut(BLOCKS_PER_UNIT)) {
        let mut t = first;
        for slot in unit_tweaks {
            *slot = t;
            t = mul_alpha(t);
        }
    }
}

#[derive(Clone, Copy)]
enum Direction {
    Encrypt,
    Decrypt,
}

/// Multiplication by the primitive element alpha in GF(2^128), IEEE 1619 byte order.
#[inline(always)]
pub(super) fn mul_alpha(t: u128) -> u128 {
    let carry = (t >> 127) as u8;
    (t << 1) ^ (0x87 * u128::from(carry))
}

/// One fused XTS pass over a batch: each group of blocks is XORed with its tweaks, run
/// through the AES backend as many blocks wide as it goes (8 with AES-NI), and XORed again,
/// while it is still in registers.
struct XtsPass<'a> {
    data: &'a mut [u8],
    tweaks: &'a [u128],
}

impl BlockSizeUser for XtsPass<'_> {
    type BlockSize = U16;
}

impl BlockClosure for XtsPass<'_> {
    #[inline(always)]
    fn call<B: BlockBackend<BlockSize = U16>>(self, backend: &mut B) {
        let width = B::ParBlocksSize::USIZE;
        let mut par = ParBlocks::<B>::default();
        let mut groups = self.data.chunks_exact_mut(16 * width);
        let mut tweak_groups = self.tweaks.chunks_exact(width);
        for (group, tweaks) in (&mut groups).zip(&mut tweak_groups) {
            for ((block, src), t) in par.iter_mut().zip(group.chunks_exact(16)).zip(tweaks) {
                *block = xor_block(src, *t).into();
            }
            backend.proc_par_blocks_inplace(&mut par);
            for ((dst, block), t) in group.chunks_exact_mut(16).zip(par.iter()).zip(tweaks) {
                dst.copy_from_slice(&xor_block(block, *t));
            }
        }
        let rest = groups.into_remainder();
        for (dst, t) in rest.chunks_exact_mut(16).zip(tweak_groups.remainder()) {
            let mut block = xor_block(dst, *t).into();
            backend.proc_block_inplace(&mut block);
            dst.copy_from_slice(&xor_block(&block, *t));
        }
    }
}

#[inline(always)]
fn xor_block(block: &[u8], tweak: u128) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(block);
    (u128::from_le_bytes(bytes) ^ tweak).to_le_bytes()
}
