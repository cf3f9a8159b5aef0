//! docs/review.md R3: the evidence that erasing a key leaves no round key in memory, recorded by
//! the test platforms (the std platform and the simulator's) through the engine's key-block
//! watch (`vcdirect::crypto::KeyBlockWatch`), without reading freed memory.
//!
//! Each block that holds a volume's cipher is recorded when it is allocated (a weak
//! reference, which keeps its memory from being reused while the record lives) and again right
//! before it is released, after its wipe: how many round keys were still in it then, read in
//! place (the AES stage's round keys, and the words of every other cipher's schedule of a
//! cascade or a non-AES volume). After erase returns, [`KeyBlockRecorder::check_erased`] asks: was the key's block
//! released with no round key left, or, if it is still allocated, is it wiped where it lives?

use std::sync::{Arc, Mutex, Weak};

use vcdirect::crypto::{KeyBlock, KeyBlockWatch};
use vcdirect_aes_hw::XtsKeys;

/// One key block as the watch saw it.
struct Recorded {
    block: Weak<KeyBlock>,
    address: usize,
    /// AES round keys and other ciphers' schedule words still in the block when it was about
    /// to be released (`None`: not yet).
    left_at_release: Option<(usize, usize)>,
}

/// The std and simulator platforms' key-block watch.
#[derive(Default)]
pub struct KeyBlockRecorder {
    blocks: Mutex<Vec<Recorded>>,
}

/// How a key's block ended up wiped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wiped {
    /// Released, after a wipe that left no round key in it.
    ReleasedAfterWipe,
    /// Still allocated, with no round key left in it.
    InPlace,
}

impl KeyBlockRecorder {
    /// A recorder to share with a platform's clones.
    pub fn new() -> Arc<KeyBlockRecorder> {
        Arc::new(KeyBlockRecorder::default())
    }

    fn blocks(&self) -> std::sync::MutexGuard<'_, Vec<Recorded>> {
        self.blocks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Key blocks recorded so far.
    pub fn recorded(&self) -> usize {
        self.blocks().len()
    }

    /// For the key whose block was at `address` (`VolumeKey::block_address`), once its erase
    /// returned: how its block was wiped, or the violation (R3, naming what was left).
    pub fn check_erased(&self, address: usize) -> Result<Wiped, String> {
        let found = self
            .blocks()
            .iter()
            .rev()
            .find(|r| r.address == address)
            .map(|r| (r.left_at_release, r.block.upgrade()));
        // Outside the lock: should the reference taken here turn out to be the block's last,
        // its release tells this recorder.
        let Some(found) = found else {
            return Err(format!(
                "R3: no key block was recorded at {address:#x} (the platform's watch never saw it)"
            ));
        };
        let of = XtsKeys::ROUND_KEYS;
        let left_in = |block: &KeyBlock| {
            (
                block.cipher().round_keys_left(),
                block.cipher().schedule_words_left(),
            )
        };
        match found {
            (Some((0, 0)), _) => Ok(Wiped::ReleasedAfterWipe),
            (Some((0, words)), _) => Err(format!(
                "R3: the cipher's block was released with {words} words of the other ciphers' schedules not wiped"
            )),
            (Some((left, _)), _) => Err(format!(
                "R3: the cipher's block was released with {left} of {of} round keys not wiped"
            )),
            (None, Some(block)) => match left_in(&block) {
                (0, 0) => Ok(Wiped::InPlace),
                (0, words) => Err(format!(
                    "R3: erase returned with the cipher's block still allocated and {words} words of the other ciphers' schedules in it"
                )),
                (left, _) => Err(format!(
                    "R3: erase returned with the cipher's block still allocated and {left} of {of} round keys in it"
                )),
            },
            // Dropped without the block's drop (impossible: the watch is told from it).
            (None, None) => Err(format!(
                "R3: the cipher's block at {address:#x} is gone but was never shown before its release"
            )),
        }
    }
}

impl KeyBlockWatch for KeyBlockRecorder {
    fn allocated(&self, block: &Arc<KeyBlock>) {
        self.blocks().push(Recorded {
            block: Arc::downgrade(block),
            address: block.address(),
            left_at_release: None,
        });
    }

    fn releasing(&self, block: &KeyBlock) {
        let left = (
            block.cipher().round_keys_left(),
            block.cipher().schedule_words_left(),
        );
        let address = block.address();
        if let Some(r) = self
            .blocks()
            .iter_mut()
            .rev()
            .find(|r| r.address == address)
        {
            r.left_at_release = Some(left);
        }
    }
}
