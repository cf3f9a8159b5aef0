//! Mounts between their claim and their publish (R13: one stalled host blocks nobody else).
//!
//! A mount's host open and probe can take as long as the host wants (a network file that
//! stops answering). The control mutex serializes the control IOCTLs, so a mount that held it
//! over its open would block list, status, dismount and every other mount behind one host. A
//! mount therefore runs in three steps ([`mount`]): under the control mutex it makes its
//! checks and claims its letter ([`Pending::claim`]); without it, it opens and probes the host
//! and builds the volume; under the mutex again it publishes (or, when shutdown or Unload
//! closed the table meanwhile, gives everything back) and ends its claim.
//!
//! Races: two mounts of one letter: the second finds the letter claimed (or in the table) and
//! is refused with STATUS_OBJECT_NAME_COLLISION before it opens anything. Two mounts of one
//! host: the host's share mode decides, as for a mount after a mount. A dismount of a volume
//! being mounted finds nothing (it is not in the table yet). Shutdown and Unload close the
//! table ([`Pending::close`]): no new claim, and a mount that has not published gives its
//! volume back when its open returns; neither waits for a mount's open. Erase-keys counts a
//! generation ([`Pending::keys_erased`]): a mount claimed before it is refused at its publish
//! ([`KEYS_ERASED_MEANWHILE`]) and gives its volume back, key erased, so erase-keys never
//! reports every key erased while a mount in progress publishes one afterwards.
//!
//! W1: a mount whose host is a file on another of our volumes holds that file open from its
//! open's return until it is in the table (where the host relation orders the forced
//! dismount of every volume) or undone. Meanwhile the host's volume counts it as closing
//! ([`ControlLocks::hold_host`], [`crate::control::order::Candidate::hosts_one_closing`]), so
//! shutdown's forced dismount does not start that volume while the host file of a mount it
//! refused at its publish (whose device may already have had links and a file system) is
//! still open: the undo closes the host first. A pick made before the mount counted itself
//! (its open returned, `hold_host` not yet run) dismounts the host's volume under a mount that
//! has published nothing yet (its host file then fails with that volume's file system, and no
//! file system can be on its device yet). The undo of a refused mount that had published (its
//! links, a forced dismount of a file system on it) and then the host volume's own forced
//! dismount may together outlast shutdown's 30 s; what is not done by then stays as it is.

use crate::faults::{self, Fault};
use crate::Status;

/// STATUS_OBJECT_NAME_COLLISION: the letter is claimed by a mount in progress.
pub const LETTER_CLAIMED: Status = Status::Host(0xC000_0035);

/// STATUS_SYSTEM_SHUTDOWN: a mount refused (or given back) because shutdown began.
pub const SHUTTING_DOWN: Status = Status::Host(0xC000_02EB);

/// STATUS_CANCELLED: a mount given back because erase-keys ran after its claim (R3: erase-keys
/// reported every key erased; a volume claimed before it must not publish with a live key).
pub const KEYS_ERASED_MEANWHILE: Status = Status::Host(0xC000_0120);

/// The mounts in progress, kept beside the volume table (under its lock). Allocation-free:
/// the letters are a bit set.
#[derive(Debug, Default)]
pub struct Pending {
    /// Bit `c - 'A'`: a mount in progress claimed letter `c`.
    letters: u32,
    /// Mounts between their claim and its end.
    in_progress: u32,
    /// Set by shutdown or Unload: the status new claims and publishes get.
    closed: Option<Status>,
    /// Counts erase-keys runs (R3): a claim made before the last one does not publish.
    erase_generation: u32,
}

/// A mount's claim: given back exactly once, to [`Pending::end`].
#[derive(Debug)]
#[must_use = "a claim is ended with Pending::end"]
pub struct MountClaim {
    letter: Option<char>,
    /// [`Pending`]'s erase generation when claimed.
    erase_generation: u32,
}

impl MountClaim {
    /// The letter this claim holds.
    pub fn letter(&self) -> Option<char> {
        self.letter
    }
}

fn bit(c: char) -> u32 {
    match c {
        'A'..='Z' => 1 << (c as u32 - 'A' as u32),
        _ => 0,
    }
}

impl Pending {
    /// No mount in progress, open.
    pub const fn new() -> Self {
        Pending {
            letters: 0,
            in_progress: 0,
            closed: None,
            erase_generation: 0,
        }
    }

    /// Claims a mount (and its letter): refused with [`LETTER_CLAIMED`] when another mount
    /// in progress holds the letter, or with the closing status once [`Pending::close`] ran.
    pub fn claim(&mut self, letter: Option<char>) -> Result<MountClaim, Status> {
        if let Some(status) = self.closed {
            return Err(status);
        }
        if let Some(c) = letter {
            if self.letter_claimed(c) {
                return Err(LETTER_CLAIMED);
            }
            self.letters |= bit(c);
        }
        self.in_progress += 1;
        Ok(MountClaim {
            letter,
            erase_generation: self.erase_generation,
        })
    }

    /// True when a mount in progress holds letter `c`.
    pub fn letter_claimed(&self, c: char) -> bool {
        self.letters & bit(c) != 0
    }

    /// Mounts claimed and not yet ended.
    pub fn in_progress(&self) -> u32 {
        self.in_progress
    }

    /// Whether a claimed mount may still publish: the closing status once closed.
    pub fn may_publish(&self) -> Result<(), Status> {
        self.closed.map_or(Ok(()), Err)
    }

    /// Whether `claim`'s mount may still publish: [`Pending::may_publish`], and
    /// [`KEYS_ERASED_MEANWHILE`] when erase-keys ran since the claim (its volume holds a live
    /// key that erase-keys did not see).
    pub fn may_publish_claim(&self, claim: &MountClaim) -> Result<(), Status> {
        self.may_publish()?;
        // The bug this check replaces: a mount claimed before erase-keys published after it.
        if faults::is_on(Fault::R3EraseGenerationIgnored) {
            return Ok(());
        }
        if claim.erase_generation != self.erase_generation {
            return Err(KEYS_ERASED_MEANWHILE);
        }
        Ok(())
    }

    /// Erase-keys runs (R3, under the control mutex, before it erases the table's keys): every
    /// mount claimed before it is refused at publish.
    pub fn keys_erased(&mut self) {
        self.erase_generation = self.erase_generation.wrapping_add(1);
    }

    /// Ends a claim (published, failed or given back): its letter is free again for the next
    /// claim, which then finds the volume in the table when it was published.
    pub fn end(&mut self, claim: MountClaim) {
        if let Some(c) = claim.letter {
            self.letters &= !bit(c);
        }
        self.in_progress = self.in_progress.saturating_sub(1);
    }

    /// Shutdown or Unload: no claim from now on, and no claimed mount publishes; `why` is
    /// what they get. Returns the mounts in progress (they give their volumes back when their
    /// opens return; nobody waits for them).
    pub fn close(&mut self, why: Status) -> u32 {
        self.closed.get_or_insert(why);
        self.in_progress
    }

    /// True once closed.
    pub fn is_closed(&self) -> bool {
        self.closed.is_some()
    }
}

/// The locks a mount takes, as the glue has them.
pub trait ControlLocks {
    /// Runs `f` holding the control mutex (the control IOCTLs one at a time).
    fn serialized<R>(&self, f: impl FnOnce() -> R) -> R;
    /// Runs `f` with the mounts in progress (under the volume table's lock: short, no wait).
    fn pending<R>(&self, f: impl FnOnce(&mut Pending) -> R) -> R;
    /// W1, under the volume table's lock: the volume in the table that `host` names (what
    /// [`OpenedHost::host_volume`] answered) counts one more host file open on it by a
    /// volume outside the table ([`crate::control::order::Candidate::hosts_one_closing`]).
    /// Returns that volume's id for [`ControlLocks::release_host`], or `None` when no volume
    /// in the table is named.
    fn hold_host(&self, host: usize) -> Option<u32>;
    /// Ends one [`ControlLocks::hold_host`] count of the volume `id` (if still in the table).
    fn release_host(&self, id: u32);
}

/// A mount's opened value (its host open, its volume built, not yet published).
pub trait OpenedHost {
    /// The volume of ours its host is a file on (a key the glue's table knows it by), if any.
    fn host_volume(&self) -> Option<usize>;
}

/// A mount in three steps: `check` and the claim under the control mutex; `open` (the host's
/// open and probe, the volume's construction) without it; `publish` under it again, unless
/// the table was closed meanwhile. Whatever has to be given back (the opened value, refused
/// before `publish` or handed back by a failed `publish` to be undone) is dropped after the
/// mutex is released, so an undo that waits on the host (drain, thread joins, the host's
/// close) holds up no other control IOCTL and no shutdown; the claim ends after that undo
/// (its letter is free only once the undone volume's links are gone), and under the mutex
/// when the volume was published, so the next mount of the letter sees it in the table.
///
/// `check` runs first under the mutex (the caller's checks: the letter free in the table and
/// the namespace, the unique id); `open` runs in the caller's thread without any lock; what
/// `publish` returns is the mount's result, or the status with the value to undo. From
/// `open`'s return until the value is published or undone (dropped), the volume its host
/// lives on counts it as closing (W1, [`ControlLocks::hold_host`]).
pub fn mount<C, H, R>(
    locks: &C,
    letter: Option<char>,
    check: impl FnOnce() -> Result<(), Status>,
    open: impl FnOnce() -> Result<H, Status>,
    publish: impl FnOnce(H) -> Result<R, (Status, Option<H>)>,
) -> Result<R, Status>
where
    C: ControlLocks,
    H: OpenedHost,
{
    // The bug this sequence replaces: the whole mount under the control mutex, undo included.
    if faults::is_on(Fault::ControlPathHeldByHost) {
        return locks.serialized(|| {
            check()?;
            let claim = locks.pending(|p| p.claim(letter))?;
            let result = open().and_then(|h| publish(h).map_err(|(status, _undone)| status));
            locks.pending(|p| p.end(claim));
            result
        });
    }
    let claim = locks.serialized(|| {
        check()?;
        locks.pending(|p| p.claim(letter))
    })?;
    // One slot for the opened value (W13: the kernel's control path counts this frame).
    let mut opened = match open() {
        Ok(opened) => Some(opened),
        Err(status) => {
            locks.pending(|p| p.end(claim));
            return Err(status);
        }
    };
    // W1: its host's volume waits for it from here until it is in the table or undone (the
    // bug this count replaces: a mount refused at its publish by shutdown still held its host
    // file open while shutdown's forced dismount started the volume that file lives on).
    let held = opened
        .as_ref()
        .and_then(OpenedHost::host_volume)
        .filter(|_| !faults::is_on(Fault::W1RefusedMountHostUncounted))
        .and_then(|host| locks.hold_host(host));
    let mut claim = Some(claim);
    let result = locks.serialized(|| {
        let may = claim
            .as_ref()
            .map(|c| locks.pending(|p| p.may_publish_claim(c)));
        let result = match (may.unwrap_or(Ok(())), opened.take()) {
            (Ok(()), Some(value)) => publish(value).map_err(|(status, back)| {
                opened = back;
                status
            }),
            (Err(status), value) => {
                opened = value;
                Err(status)
            }
            (Ok(()), None) => Err(Status::InvalidParameter),
        };
        // Nothing to undo: the claim ends here (a published volume is in the table).
        if opened.is_none() {
            if let Some(claim) = claim.take() {
                locks.pending(|p| p.end(claim));
            }
        }
        result
    });
    // A mount refused at (or failed in) its publish gives its volume back here, outside the
    // mutex (the undo may wait on the host), then ends its claim. Its host closed (or, once
    // published, in the table's host relation), its host's volume may go.
    drop(opened);
    if let Some(id) = held {
        locks.release_host(id);
    }
    if let Some(claim) = claim.take() {
        locks.pending(|p| p.end(claim));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r13_a_claim_holds_its_letter_until_it_ends_and_close_refuses_the_rest() {
        let mut p = Pending::new();
        let s = p.claim(Some('S')).unwrap();
        assert!(p.letter_claimed('S') && !p.letter_claimed('T'));
        assert_eq!(p.claim(Some('S')).unwrap_err(), LETTER_CLAIMED);
        let none = p.claim(None).unwrap();
        let t = p.claim(Some('T')).unwrap();
        assert_eq!((p.in_progress(), t.letter()), (3, Some('T')));
        p.end(s);
        assert!(!p.letter_claimed('S'));
        assert_eq!(p.may_publish(), Ok(()));
        // Shutdown: the two still in progress are counted, none publishes, none is claimed.
        assert_eq!(p.close(SHUTTING_DOWN), 2);
        assert_eq!(p.may_publish(), Err(SHUTTING_DOWN));
        assert_eq!(p.claim(Some('U')).unwrap_err(), SHUTTING_DOWN);
        // A second close keeps the first reason.
        p.close(Status::DeviceNotReady);
        assert_eq!(p.may_publish(), Err(SHUTTING_DOWN));
        p.end(none);
        p.end(t);
        assert_eq!(p.in_progress(), 0);
        assert!(p.is_closed());
    }
}
