//! The driver-wide current gates and their reload (docs/review.md R6).
//!
//! Both gates and a reload counter live in one atomic word, so a snapshot can never mix the
//! read gate of one reload with the write gate of another. A volume copies a snapshot at mount
//! and never looks here again: a reload changes only volumes mounted after it, for both gates
//! alike.

use core::sync::atomic::{AtomicU32, Ordering};

use super::config::{GateReading, RegistrySource};
use super::Gates;

const READ_BIT: u32 = 1;
const WRITE_BIT: u32 = 2;
const GENERATION_SHIFT: u32 = 2;

const fn encode(gates: Gates, generation: u32) -> u32 {
    let mut word = generation << GENERATION_SHIFT;
    if gates.read {
        word |= READ_BIT;
    }
    if gates.write {
        word |= WRITE_BIT;
    }
    word
}

const fn decode(word: u32) -> (Gates, u32) {
    (
        Gates {
            read: word & READ_BIT != 0,
            write: word & WRITE_BIT != 0,
        },
        word >> GENERATION_SHIFT,
    )
}

/// What one reload read and published.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reload {
    /// Each gate's state, with the reason when off (log these once).
    pub reading: GateReading,
    /// The gates now published.
    pub gates: Gates,
    /// The generation now published (counts publications, wraps at 2^30).
    pub generation: u32,
}

/// The current global gates. Starts with both off at generation 0; usable as a `static`.
#[derive(Debug, Default)]
pub struct GateStore {
    word: AtomicU32,
}

impl GateStore {
    /// Both gates off, generation 0.
    pub const fn new() -> Self {
        GateStore {
            word: AtomicU32::new(0),
        }
    }

    /// The gates a volume mounting now copies into itself.
    pub fn snapshot(&self) -> Gates {
        decode(self.word.load(Ordering::Acquire)).0
    }

    /// The gates and the generation they were published with, read together.
    pub fn snapshot_with_generation(&self) -> (Gates, u32) {
        decode(self.word.load(Ordering::Acquire))
    }

    /// Publishes `gates` for volumes mounted from now on; returns the new generation.
    pub fn publish(&self, gates: Gates) -> u32 {
        let mut next = 0;
        // The closure always returns Some, so fetch_update cannot fail.
        let _ = self
            .word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                next = (decode(word).1 + 1) & (u32::MAX >> GENERATION_SHIFT);
                Some(encode(gates, next))
            });
        next
    }

    /// Re-reads both gates from `source` and publishes them (driver load, `vcctl gates reload`).
    pub fn reload<S: RegistrySource + ?Sized>(&self, source: &S) -> Reload {
        let reading = GateReading::load(source);
        let gates = reading.gates();
        let generation = self.publish(gates);
        Reload {
            reading,
            gates,
            generation,
        }
    }
}

/// The driver's one store: the glue reloads it at DriverEntry and on the reload IOCTL, and
/// every mount takes its snapshot from it.
pub static DRIVER_GATES: GateStore = GateStore::new();
