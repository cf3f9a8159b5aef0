//! Range ordering shared by the legacy queue and the direct path.
//!
//! Owns: the per-volume table of byte ranges in flight and who waits for whom.
//! Never: issues I/O, touches buffers, or completes requests.
//! A request registers at dispatch ([`RangeLock::register`]) and is granted in arrival order
//! among the requests it overlaps; it never waits for one it does not overlap (docs/review.md R12):
//! - a write waits for every earlier overlapping read or write;
//! - a read waits for every earlier overlapping write;
//! - a flush waits for every earlier write, wherever it is, and nobody waits for a flush.
//!
//! Because a later request only ever waits for earlier ones, overlapping requests are served
//! in arrival order and writes cannot starve.
//!
//! Cost: entries live in a treap ordered by start offset and augmented with the largest end
//! in each subtree, so finding the overlapping entries costs O(log n + k) for n entries in
//! flight and k overlaps. Entries come from a pool fixed at mount; when it is full the caller
//! keeps the request in its arrival-ordered backlog and registers it when an entry frees.

mod interval;

use alloc::vec::Vec;
use core::ops::Range;

use interval::IntervalTree;

/// How a request uses its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads the range.
    Read,
    /// Writes the range.
    Write,
    /// Flushes: orders after every earlier write, blocks nobody.
    Flush,
}

/// A registered request's place in the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket(u32);

impl Ticket {
    /// The slot index (for tables keyed by ticket).
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// A ticket that names no entry, for a request not registered yet.
    pub(crate) const fn placeholder() -> Self {
        Ticket(u32::MAX)
    }
}

struct Entry {
    range: Range<u64>,
    access: Access,
    /// Earlier entries this one still waits for.
    blockers: u32,
    /// Later entries that wait for this one.
    dependents: Vec<u32>,
    /// Position in `RangeLock::writes` while a live write.
    write_pos: u32,
    live: bool,
}

/// The range lock of one volume. Not synchronised itself: the volume keeps it under its lock.
pub struct RangeLock {
    entries: Vec<Entry>,
    free: Vec<u32>,
    tree: IntervalTree,
    /// Live write entries, for flush ordering without a tree walk.
    writes: Vec<u32>,
    live: usize,
    volume_wide_barrier: bool,
    scratch: Vec<u32>,
    disjoint_waits: u64,
}

impl RangeLock {
    /// A lock with a pool of `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Self {
        RangeLock {
            entries: (0..capacity)
                .map(|_| Entry {
                    range: 0..0,
                    access: Access::Read,
                    blockers: 0,
                    dependents: Vec::new(),
                    write_pos: 0,
                    live: false,
                })
                .collect(),
            free: (0..capacity as u32).rev().collect(),
            tree: IntervalTree::with_capacity(capacity),
            writes: Vec::with_capacity(capacity),
            live: 0,
            volume_wide_barrier: crate::faults::is_on(crate::faults::Fault::R12VolumeWideBarrier),
            scratch: Vec::with_capacity(capacity),
            disjoint_waits: 0,
        }
    }

    /// Entries in use.
    pub fn in_flight(&self) -> usize {
        self.live
    }

    /// Waits registered on a request that does not overlap (docs/review.md R12: must stay 0).
    pub fn disjoint_waits(&self) -> u64 {
        self.disjoint_waits
    }

    /// True when no entry is free.
    pub fn is_full(&self) -> bool {
        self.free.is_empty()
    }

    /// Registers a request. Returns its ticket and whether it is granted at once, or `None`
    /// when the pool is full.
    pub fn register(&mut self, range: Range<u64>, access: Access) -> Option<(Ticket, bool)> {
        let id = self.free.pop()?;
        self.scratch.clear();
        match access {
            Access::Flush => self.scratch.extend_from_slice(&self.writes),
            Access::Read if self.volume_wide_barrier => {
                // Fault switch: the seed proposal's volume-wide barrier (R12's bug).
                self.scratch.extend_from_slice(&self.writes)
            }
            _ => self.tree.overlapping(range.clone(), &mut self.scratch),
        }
        let mut blockers = 0;
        for i in 0..self.scratch.len() {
            let earlier = self.scratch[i];
            let e = &self.entries[earlier as usize];
            let conflicts = match (access, e.access) {
                (_, Access::Flush) => false,
                (Access::Write, _) => true,
                (Access::Read | Access::Flush, Access::Write) => true,
                (Access::Read | Access::Flush, Access::Read) => false,
            };
            if conflicts {
                // Independent check of R12: every wait of a read or write is on an overlap.
                let er = &self.entries[earlier as usize].range;
                if access != Access::Flush && !(er.start < range.end && range.start < er.end) {
                    self.disjoint_waits += 1;
                }
                self.entries[earlier as usize].dependents.push(id);
                blockers += 1;
            }
        }
        let e = &mut self.entries[id as usize];
        e.range = range.clone();
        e.access = access;
        e.blockers = blockers;
        e.dependents.clear();
        e.live = true;
        if access != Access::Flush {
            self.tree.insert(id, range.start, range.end);
        }
        if access == Access::Write {
            self.entries[id as usize].write_pos = self.writes.len() as u32;
            self.writes.push(id);
        }
        self.live += 1;
        Some((Ticket(id), blockers == 0))
    }

    /// Releases a granted request; appends the tickets that became granted to `granted`.
    pub fn release(&mut self, ticket: Ticket, granted: &mut Vec<Ticket>) {
        let id = ticket.0;
        let e = &mut self.entries[id as usize];
        assert!(
            e.live && e.blockers == 0,
            "only a granted entry is released"
        );
        e.live = false;
        let access = e.access;
        let start = e.range.start;
        let dependents = core::mem::take(&mut e.dependents);
        if access != Access::Flush {
            self.tree.remove(id, start);
        }
        if access == Access::Write {
            let pos = self.entries[id as usize].write_pos as usize;
            self.writes.swap_remove(pos);
            if let Some(&moved) = self.writes.get(pos) {
                self.entries[moved as usize].write_pos = pos as u32;
            }
        }
        for &d in &dependents {
            let dep = &mut self.entries[d as usize];
            dep.blockers -= 1;
            if dep.blockers == 0 {
                granted.push(Ticket(d));
            }
        }
        // Keep the dependents' capacity for the next user of this entry.
        let mut dependents = dependents;
        dependents.clear();
        self.entries[id as usize].dependents = dependents;
        self.free.push(id);
        self.live -= 1;
        debug_assert!(self.tree.len() <= self.live);
    }
}

#[cfg(test)]
mod tests;
