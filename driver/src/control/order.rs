//! The order of a forced dismount of every volume (W1: shutdown and Unload).
//!
//! A volume whose host is a file on another of our volumes (nested: a container on a file
//! system mounted on a vcdirect volume) must be dismounted first: its file system's delayed
//! writes go to its host file, which lives on the outer volume, so the outer one must still
//! be there. The mount order says nothing reliable about this (ids start at a random value per
//! load and wrap, mounts run side by side); the host relation, recorded at mount from what the
//! host open reached, does.

use crate::faults::{self, Fault};

/// One mounted volume as the forced dismount of every volume sees it.
pub trait Candidate {
    /// Its id (`VcVolume<N>`).
    fn id(&self) -> u32;
    /// A dismount already runs for it (a dismount IOCTL's thread, or an earlier pick).
    fn busy(&self) -> bool;
    /// Its host is a file (or a raw open) on `other`'s volume device.
    fn hosted_on(&self, other: &Self) -> bool;
    /// A volume whose host lives on this one is outside the table with its host still open
    /// (it left the table and its device is being deleted, or it is a mount between its
    /// host's open and its publish or undo, `crate::control::pending::mount`): this one must
    /// not start yet.
    fn hosts_one_closing(&self) -> bool {
        false
    }
}

/// What [`next_forced`] chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Dismount the volume at this index now.
    Dismount(usize),
    /// Every volume left is the host of one whose dismount runs elsewhere (a dismount IOCTL's
    /// thread): wait for it to leave the table, then ask again.
    Wait,
    /// No volume is left that no dismount runs for.
    Done,
}

/// The next volume to dismount, forced, among `volumes` (every volume still in the table,
/// the busy ones included; a pick stays in the table, busy, until its thread deleted it): one
/// no dismount runs for, that no other volume in the table lives on and none that left the
/// table still closes its host on, the highest id among those (as before for unrelated
/// volumes). When no free volume qualifies and a dismount still runs (a busy volume, or a host
/// still closing), [`Next::Wait`]: whatever it hosts may only start after it finished. Only
/// when nothing runs and the free volumes host each other (a cycle, which a real host
/// relation cannot make), the highest id, so the loop never stalls. O(n²) comparisons, no
/// allocation (called under the table's spin lock).
pub fn next_forced<C: Candidate>(volumes: &[C]) -> Option<usize> {
    match decide(volumes) {
        Next::Dismount(i) => Some(i),
        Next::Wait | Next::Done => None,
    }
}

/// [`next_forced`] with the reason when it returns nothing.
pub fn decide<C: Candidate>(volumes: &[C]) -> Next {
    let free = || volumes.iter().enumerate().filter(|(_, v)| !v.busy());
    let highest =
        |it: &mut dyn Iterator<Item = (usize, &C)>| it.max_by_key(|(_, v)| v.id()).map(|(i, _)| i);
    if free().next().is_none() {
        return Next::Done;
    }
    // The bug this order replaces: highest id first, whatever lives on what.
    if faults::is_on(Fault::W1ForcedOrderById) {
        return highest(&mut free()).map_or(Next::Done, Next::Dismount);
    }
    let closing = |i: usize| {
        volumes[i].hosts_one_closing() && !faults::is_on(Fault::W1HostStartedWhileNestedRuns)
    };
    let hosts_another = |i: usize| {
        closing(i)
            || volumes
                .iter()
                .enumerate()
                .any(|(j, v)| j != i && v.hosted_on(&volumes[i]))
    };
    if let Some(i) = highest(&mut free().filter(|(i, _)| !hosts_another(*i))) {
        return Next::Dismount(i);
    }
    // Every free volume hosts another. While any dismount runs, wait for it: a free volume
    // hosting only free ones may sit below one that runs (C on A on B: C runs, A hosts C, B
    // hosts the free A; starting A would take C's host file away).
    let running = (0..volumes.len()).any(|i| volumes[i].busy() || closing(i));
    if faults::is_on(Fault::W1HostStartedWhileNestedRuns) {
        // The bug: wait only when no free volume hosts a free one.
        let hosts_a_free_one = |i: usize| {
            volumes
                .iter()
                .enumerate()
                .any(|(j, v)| j != i && !v.busy() && v.hosted_on(&volumes[i]))
        };
        if free().all(|(i, _)| !hosts_a_free_one(i)) {
            return Next::Wait;
        }
    } else if running {
        return Next::Wait;
    }
    highest(&mut free()).map_or(Next::Done, Next::Dismount)
}
