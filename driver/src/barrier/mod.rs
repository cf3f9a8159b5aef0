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
//!
//! Nothing is allocated after construction (W6): who waits for a released entry is not kept
//! in a list per entry but found again at release, because it is exactly the later live
//! entries that conflict with it (an entry that arrived after it, while it was live, counted
//! it; one that conflicts and is still live has not been granted, since it still counts it).

mod interval;

use alloc::vec::Vec;
use core::ops::Range;

use interval::IntervalTree;

use crate::io::try_vec;
use crate::Status;

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

    /// The ticket as a number (kept in a waiting request's note).
    pub(crate) const fn raw(self) -> u32 {
        self.0
    }

    /// The ticket [`raw`](Self::raw) gave.
    pub(crate) const fn from_raw(raw: u32) -> Self {
        Ticket(raw)
    }
}

struct Entry {
    range: Range<u64>,
    access: Access,
    /// Arrival number: later registrations have larger ones.
    seq: u64,
    /// Earlier entries this one still waits for.
    blockers: u32,
    /// Position in `RangeLock::writes` (a live write) or `RangeLock::flushes` (a live flush).
    list_pos: u32,
    live: bool,
}

/// Whether a later request with `later` access waits for an earlier one with `earlier`.
fn conflicts(later: Access, earlier: Access) -> bool {
    match (later, earlier) {
        (_, Access::Flush) => false,
        (Access::Write, _) => true,
        (Access::Read | Access::Flush, Access::Write) => true,
        (Access::Read | Access::Flush, Access::Read) => false,
    }
}

/// The range lock of one volume. Not synchronised itself: the volume keeps it under its lock.
pub struct RangeLock {
    entries: Vec<Entry>,
    free: Vec<u32>,
    tree: IntervalTree,
    /// Live write entries, for flush ordering without a tree walk.
    writes: Vec<u32>,
    /// Live flush entries (the ones a released write may unblock).
    flushes: Vec<u32>,
    next_seq: u64,
    live: usize,
    volume_wide_barrier: bool,
    scratch: Vec<u32>,
    disjoint_waits: u64,
}

impl RangeLock {
    /// A lock with a pool of `capacity` entries, every table allocated now (fallibly: W6,
    /// STATUS_INSUFFICIENT_RESOURCES) and never again.
    pub fn with_capacity(capacity: usize) -> Result<Self, Status> {
        let mut entries = try_vec(capacity)?;
        entries.resize_with(capacity, || Entry {
            range: 0..0,
            access: Access::Read,
            seq: 0,
            blockers: 0,
            list_pos: 0,
            live: false,
        });
        let mut free = try_vec(capacity)?;
        free.extend((0..capacity as u32).rev());
        Ok(RangeLock {
            entries,
            free,
            tree: IntervalTree::with_capacity(capacity)?,
            writes: try_vec(capacity)?,
            flushes: try_vec(capacity)?,
            next_seq: 0,
            live: 0,
            volume_wide_barrier: crate::faults::is_on(crate::faults::Fault::R12VolumeWideBarrier),
            scratch: try_vec(capacity)?,
            disjoint_waits: 0,
        })
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
            if conflicts(access, e.access) {
                // Independent check of R12: every wait of a read or write is on an overlap.
                let er = &e.range;
                if access != Access::Flush && !(er.start < range.end && range.start < er.end) {
                    self.disjoint_waits += 1;
                }
                blockers += 1;
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let e = &mut self.entries[id as usize];
        e.range = range.clone();
        e.access = access;
        e.seq = seq;
        e.blockers = blockers;
        e.live = true;
        if access != Access::Flush {
            self.tree.insert(id, range.start, range.end);
        }
        // Neither list outgrows its capacity: one slot per entry.
        match access {
            Access::Write => {
                self.entries[id as usize].list_pos = self.writes.len() as u32;
                self.writes.push(id);
            }
            Access::Flush => {
                self.entries[id as usize].list_pos = self.flushes.len() as u32;
                self.flushes.push(id);
            }
            Access::Read => {}
        }
        self.live += 1;
        Some((Ticket(id), blockers == 0))
    }

    /// Releases a granted request; appends the tickets that became granted to `granted`
    /// (in arrival order; `granted` needs room for the pool's capacity, it never grows).
    pub fn release(&mut self, ticket: Ticket, granted: &mut Vec<Ticket>) {
        let id = ticket.0;
        let Some(e) = self.entries.get_mut(id as usize) else {
            debug_assert!(false, "released ticket {id} is not an entry");
            return;
        };
        debug_assert!(
            e.live && e.blockers == 0,
            "only a granted entry is released"
        );
        if !e.live {
            return;
        }
        e.live = false;
        let (access, range, seq) = (e.access, e.range.clone(), e.seq);
        if access != Access::Flush {
            self.tree.remove(id, range.start);
        }
        match access {
            Access::Write => Self::unlist(&mut self.entries, &mut self.writes, id),
            Access::Flush => Self::unlist(&mut self.entries, &mut self.flushes, id),
            Access::Read => {}
        }
        // Who counted this entry: the later live entries that conflict with it.
        self.scratch.clear();
        match access {
            Access::Flush => {}
            Access::Read => self.tree.overlapping(range, &mut self.scratch),
            Access::Write => {
                if self.volume_wide_barrier {
                    // Fault switch: every read counted every write (R12's bug), and a write
                    // only the overlapping ones.
                    let entries = &self.entries;
                    self.scratch.extend((0..entries.len() as u32).filter(|&i| {
                        let other = &entries[i as usize];
                        other.live
                            && (other.access == Access::Read
                                || (other.access == Access::Write
                                    && other.range.start < range.end
                                    && range.start < other.range.end))
                    }));
                } else {
                    self.tree.overlapping(range, &mut self.scratch);
                }
                self.scratch.extend_from_slice(&self.flushes);
            }
        }
        let first = granted.len();
        for i in 0..self.scratch.len() {
            let d = self.scratch[i];
            let dep = &mut self.entries[d as usize];
            if dep.live && dep.seq > seq && dep.blockers > 0 && conflicts(dep.access, access) {
                dep.blockers -= 1;
                if dep.blockers == 0 {
                    granted.push(Ticket(d));
                }
            }
        }
        // In arrival order. An insertion sort: in place and without recursion (the slice
        // sorts of `core` recurse, which the W13 stack check refuses on these paths); the
        // tickets granted by one release are few, and already nearly in order.
        let newly = &mut granted[first..];
        for i in 1..newly.len() {
            let mut j = i;
            while j > 0
                && self.entries[newly[j - 1].index()].seq > self.entries[newly[j].index()].seq
            {
                newly.swap(j - 1, j);
                j -= 1;
            }
        }
        self.free.push(id);
        self.live -= 1;
        debug_assert!(self.tree.len() <= self.live);
    }

    /// Takes live write or flush `id` out of its list.
    fn unlist(entries: &mut [Entry], list: &mut Vec<u32>, id: u32) {
        let pos = entries[id as usize].list_pos as usize;
        if pos < list.len() {
            list.swap_remove(pos);
            if let Some(&moved) = list.get(pos) {
                entries[moved as usize].list_pos = pos as u32;
            }
        }
    }
}

#[cfg(test)]
mod tests;
