//! A fixed, lock-free table of the threads that are above PASSIVE_LEVEL (docs/review.md W9).
//!
//! Owns: where a platform without thread-locals keeps each thread's virtual IRQL (the Wine
//! build of the glue, `wdm/irql.rs`, keyed by the thread's TEB address): one entry per raised
//! thread, claimed by compare-exchange on its first raise and given back when it is at
//! PASSIVE_LEVEL again, so the table bounds concurrently raised threads, not threads; a thread
//! without an entry is at PASSIVE_LEVEL. Allocates nothing and never blocks (it is used inside
//! spin locks and completion routines).
//! Never: checks a contract ([`super::irql::VirtualIrql`] does) or knows what a key is.
//!
//! Only the thread a key names claims, writes and frees that key's entry, so a thread that
//! finds its own key owns the entry until it frees it; other threads only compare keys.

use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use super::irql::Irql;

/// The table had no free entry for a raised thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableFull;

struct Entry {
    /// The owning thread's key; 0: free.
    key: AtomicUsize,
    /// Its level, an `Irql` as u8 (read and written by the owner only).
    level: AtomicU8,
}

/// Up to `N` raised threads, each named by a non-zero key.
pub struct IrqlTable<const N: usize> {
    entries: [Entry; N],
    /// Entries at or above this index were never claimed: lookups stop here. A thread's own
    /// entry lies below it (the thread raised it before it used the entry).
    high: AtomicUsize,
}

impl<const N: usize> Default for IrqlTable<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> IrqlTable<N> {
    /// An empty table (usable in a `static`).
    pub const fn new() -> Self {
        IrqlTable {
            entries: [const {
                Entry {
                    key: AtomicUsize::new(0),
                    level: AtomicU8::new(Irql::Passive as u8),
                }
            }; N],
            high: AtomicUsize::new(0),
        }
    }

    fn find(&self, key: usize) -> Option<&Entry> {
        let high = self.high.load(Ordering::Acquire).min(N);
        self.entries[..high]
            .iter()
            .find(|e| e.key.load(Ordering::Acquire) == key)
    }

    /// The level of the thread `key` (PASSIVE_LEVEL without an entry, or for key 0).
    pub fn level(&self, key: usize) -> Irql {
        if key == 0 {
            return Irql::Passive;
        }
        match self.find(key).map(|e| e.level.load(Ordering::Relaxed)) {
            Some(1) => Irql::Apc,
            Some(2..) => Irql::Dispatch,
            _ => Irql::Passive,
        }
    }

    /// Records `level` for the calling thread `key`: claims an entry when it rises above
    /// PASSIVE_LEVEL, frees it when it is at PASSIVE_LEVEL again. Key 0 is not recorded.
    /// A raise with no free entry is [`TableFull`] (the thread then reads as PASSIVE_LEVEL).
    pub fn set(&self, key: usize, level: Irql) -> Result<(), TableFull> {
        if key == 0 {
            return Ok(());
        }
        match (self.find(key), level) {
            (Some(entry), Irql::Passive) => entry.key.store(0, Ordering::Release),
            (Some(entry), level) => entry.level.store(level as u8, Ordering::Relaxed),
            (None, Irql::Passive) => {}
            (None, level) => {
                let (index, entry) = self
                    .entries
                    .iter()
                    .enumerate()
                    .find(|(_, e)| {
                        e.key
                            .compare_exchange(0, key, Ordering::AcqRel, Ordering::Relaxed)
                            .is_ok()
                    })
                    .ok_or(TableFull)?;
                // Written after the claim: only the owner reads its level.
                entry.level.store(level as u8, Ordering::Relaxed);
                self.high.fetch_max(index + 1, Ordering::AcqRel);
            }
        }
        Ok(())
    }

    /// Threads with an entry now (above PASSIVE_LEVEL, as far as the table knows).
    pub fn raised(&self) -> usize {
        let high = self.high.load(Ordering::Acquire).min(N);
        self.entries[..high]
            .iter()
            .filter(|e| e.key.load(Ordering::Acquire) != 0)
            .count()
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::sync::Arc;
    use std::vec::Vec;

    #[test]
    fn w9_table_keeps_a_level_per_thread_and_frees_entries_at_passive() {
        let table = IrqlTable::<2>::new();
        assert_eq!(table.level(7), Irql::Passive);
        table.set(7, Irql::Dispatch).unwrap();
        table.set(9, Irql::Apc).unwrap();
        assert_eq!(
            (table.level(7), table.level(9)),
            (Irql::Dispatch, Irql::Apc)
        );
        assert_eq!(table.raised(), 2);
        // Full: a third raised thread is refused and reads as PASSIVE_LEVEL.
        assert_eq!(table.set(11, Irql::Dispatch), Err(TableFull));
        assert_eq!(table.level(11), Irql::Passive);
        // Back at PASSIVE_LEVEL frees the entry for another thread.
        table.set(7, Irql::Passive).unwrap();
        assert_eq!(table.level(7), Irql::Passive);
        table.set(11, Irql::Dispatch).unwrap();
        assert_eq!(
            (table.level(11), table.level(9)),
            (Irql::Dispatch, Irql::Apc)
        );
        // Key 0 (no thread) is never recorded.
        table.set(0, Irql::Dispatch).unwrap();
        assert_eq!(table.level(0), Irql::Passive);
        table.set(9, Irql::Passive).unwrap();
        table.set(11, Irql::Passive).unwrap();
        assert_eq!(table.raised(), 0);
    }

    #[test]
    fn w9_table_threads_raising_at_once_see_only_their_own_level() {
        static TABLE: IrqlTable<8> = IrqlTable::new();
        let start = Arc::new(std::sync::Barrier::new(8));
        let threads: Vec<_> = (1..=8usize)
            .map(|key| {
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    for round in 0..2000 {
                        let level = if (key + round) % 2 == 0 {
                            Irql::Dispatch
                        } else {
                            Irql::Apc
                        };
                        TABLE.set(key, level).unwrap();
                        assert_eq!(TABLE.level(key), level);
                        TABLE.set(key, Irql::Passive).unwrap();
                        assert_eq!(TABLE.level(key), Irql::Passive);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(TABLE.raised(), 0);
    }
}
