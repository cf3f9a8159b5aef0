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
/// the busy ones included): one no dismount runs for and that no other volume in the table
/// lives on, the highest id among those (as before for unrelated volumes). When every free
/// volume is the host of a busy one, [`Next::Wait`]. When the free volumes host each other
/// (a cycle, which a real host relation cannot make), the highest id, so the loop never
/// stalls. O(n²) comparisons, no allocation (called under the table's spin lock).
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
    let hosts_another = |i: usize| {
        volumes
            .iter()
            .enumerate()
            .any(|(j, v)| j != i && v.hosted_on(&volumes[i]))
    };
    if let Some(i) = highest(&mut free().filter(|(i, _)| !hosts_another(*i))) {
        return Next::Dismount(i);
    }
    // Every free volume hosts another. Hosting only busy ones: wait for those.
    let hosts_a_free_one = |i: usize| {
        volumes
            .iter()
            .enumerate()
            .any(|(j, v)| j != i && !v.busy() && v.hosted_on(&volumes[i]))
    };
    if free().all(|(i, _)| !hosts_a_free_one(i)) {
        return Next::Wait;
    }
    highest(&mut free()).map_or(Next::Done, Next::Dismount)
}

/// The whole order [`next_forced`] gives when each pick is dismounted at once and leaves the
/// table (the loop of the glue, for tests and the docs): ids, first dismounted first.
pub fn forced_order<C: Candidate + Clone>(volumes: &[C]) -> alloc::vec::Vec<u32> {
    let mut left: alloc::vec::Vec<C> = volumes.to_vec();
    let mut order = alloc::vec::Vec::new();
    while let Some(i) = next_forced(&left) {
        order.push(left.remove(i).id());
    }
    order
}
