//! The volume's cap on host operations in flight on the direct path: at most [`HOST_OPS`]
//! child reads and writes at once, shared by the 8 workers (the kernel host keeps that many
//! child-operation slots per volume). It counts host operations, not requests: one worker may
//! have several segments of its request in flight, and 8 workers may have one each.
//!
//! Owns: the count of free permits and of workers waiting for one.
//! Never: holds its lock while blocking.
//!
//! No deadlock: a worker waits for a permit only while it holds none
//! ([`HostOps::take_for`]); holding some, it takes one only if one is free and otherwise
//! finishes its oldest operation first, which needs nothing from anybody. A permit given back
//! while a worker waits goes to that worker, not to whoever asks next, so a worker with a long
//! request cannot starve one that holds nothing.
//!
//! Fair share: holding some, a worker takes another only while it holds fewer than the cap
//! divided by the workers in a transfer ([`HostOps::enter`]), at least one. A lone request
//! gets all 8; with 8 workers busy each keeps one in flight, as before segments went in flight together, and none
//! waits for a permit (a worker that grabbed more would make the next one to start wait).

use crate::faults::{self, Fault};
use crate::platform::{Lock, Platform, Semaphore};
use crate::Status;

/// Host operations in flight per volume on the direct path.
pub const HOST_OPS: usize = 8;

struct State {
    /// Permits nobody holds.
    free: usize,
    /// Workers blocked in `take_for` (holding none, in the middle of a request).
    waiters: usize,
    /// Idle workers blocked in `take_for_job` (a permit before they take a job).
    takers: usize,
    /// Permits that completion work items carry now ([`HostOps::try_carry`]).
    carried: usize,
    /// Workers in a transfer (between `enter` and `leave`).
    active: usize,
    /// The cap.
    permits: usize,
    /// Permits held (including ones handed to a waiter that has not woken yet).
    held: usize,
    /// The most ever held at once.
    max_held: usize,
}

impl State {
    /// Takes a free permit.
    fn grab(&mut self) {
        self.free -= 1;
        self.held += 1;
        self.max_held = self.max_held.max(self.held);
    }
}

/// The cap. See the module documentation.
pub struct HostOps<P: Platform> {
    state: P::Lock<State>,
    /// Wakes a waiter; each release hands it one permit.
    wake: P::Semaphore,
    /// Wakes a taker; each release hands it one permit.
    wake_taker: P::Semaphore,
}

/// Permits that completion work items may carry at once: the workers always keep the rest, so
/// a system worker pool slow to run the work items can delay only these.
pub const CARRIED_MAX: usize = 2;

impl<P: Platform> HostOps<P> {
    /// A cap of `permits` operations in flight, or STATUS_INSUFFICIENT_RESOURCES when its
    /// semaphore's allocation fails (W6).
    pub fn new(permits: usize) -> Result<Self, Status> {
        Ok(HostOps {
            state: P::Lock::new(State {
                free: permits,
                waiters: 0,
                takers: 0,
                carried: 0,
                active: 0,
                permits,
                held: 0,
                max_held: 0,
            }),
            wake: P::Semaphore::new(0)?,
            wake_taker: P::Semaphore::new(0)?,
        })
    }

    /// An idle worker's permit, before it takes a job (waits until one is free; a permit given
    /// back goes to a worker in the middle of a request first).
    pub fn take_for_job(&self) {
        let got = self.state.with(|s| {
            if s.free > 0 {
                s.grab();
                true
            } else {
                s.takers += 1;
                false
            }
        });
        if !got {
            // `give` counted this permit as held when it handed it over.
            self.wake_taker.acquire();
        }
    }

    /// Takes a permit for one more host operation of a worker that holds `holding`: with none
    /// held it waits until one is free (and gets it: true); holding some, it takes one only if
    /// one is free now (false: finish an operation in flight first).
    pub fn take_for(&self, holding: usize) -> bool {
        let may_wait = holding == 0 || faults::is_on(Fault::CapWaitWhileHolding);
        let got = self.state.with(|s| {
            let share = (s.permits / s.active.max(1)).max(1);
            if s.free > 0 && (holding == 0 || holding < share) {
                s.grab();
                true
            } else {
                if may_wait {
                    s.waiters += 1;
                }
                false
            }
        });
        if got || !may_wait {
            return got;
        }
        // `give` counted this permit as held when it handed it over.
        self.wake.acquire();
        true
    }

    /// Takes a permit for a request issued by the dispatching thread, only if one is free now
    /// and no worker waits for one (docs/review.md R12: it never overtakes a waiting worker).
    pub fn try_take_now(&self) -> bool {
        self.state.with(|s| {
            let free = s.free > 0 && s.waiters == 0 && s.takers == 0;
            if free {
                s.grab();
            }
            free
        })
    }

    /// A worker starts a transfer (counts for the fair share).
    pub fn enter(&self) {
        self.state.with(|s| s.active += 1);
    }

    /// A worker ended a transfer.
    pub fn leave(&self) {
        self.state.with(|s| s.active = s.active.saturating_sub(1));
    }

    /// Gives a permit back (its operation finished): to a worker waiting in the middle of a
    /// request if there is one, else to an idle worker waiting for one.
    pub fn give(&self) {
        let to = self.state.with(Self::hand_over);
        self.wake_up(to);
    }

    /// Whom a permit given back goes to (counted as still held when it is handed over).
    fn hand_over(s: &mut State) -> Option<bool> {
        if s.waiters > 0 {
            s.waiters -= 1;
            Some(true)
        } else if s.takers > 0 {
            s.takers -= 1;
            Some(false)
        } else {
            s.held -= 1;
            s.free += 1;
            None
        }
    }

    fn wake_up(&self, to: Option<bool>) {
        match to {
            Some(true) => self.wake.release(),
            Some(false) => self.wake_taker.release(),
            None => {}
        }
    }

    /// A held permit whose operation finished may go with its request's completion work item
    /// (true: counted as carried) when no worker in the middle of a request waits for one, more
    /// than `queued` jobs wait than idle workers wait for one, and fewer than [`CARRIED_MAX`]
    /// are carried. A hint for the jobs' sake; it never changes who is served first.
    pub fn try_carry(&self, queued: usize) -> bool {
        self.state.with(|s| {
            let waiter = s.waiters > 0 && !faults::is_on(Fault::CarriedPassesWaiter);
            let carry = !waiter && queued > s.takers && s.carried < CARRIED_MAX;
            s.carried += usize::from(carry);
            carry
        })
    }

    /// A carried permit comes back without being used (no work item could take it, or it had
    /// nothing to issue): given back as by [`give`](Self::give).
    pub fn give_carried(&self) {
        let to = self.state.with(|s| {
            s.carried -= 1;
            Self::hand_over(s)
        });
        self.wake_up(to);
    }

    /// The work item that carries a permit is about to use it: true when it may (the permit
    /// is an ordinary held one from now on); false when a worker in the middle of a request
    /// waits for one, which gets it instead (docs/review.md R12: such a worker is never
    /// starved by carried permits).
    pub fn use_carried(&self) -> bool {
        let to = self.state.with(|s| {
            s.carried -= 1;
            if s.waiters > 0 && !faults::is_on(Fault::CarriedPassesWaiter) {
                Self::hand_over(s)
            } else {
                None
            }
        });
        self.wake_up(to);
        to.is_none()
    }

    /// Workers in the middle of a request waiting for a permit now.
    pub fn waiting_mid_request(&self) -> usize {
        self.state.with(|s| s.waiters)
    }

    /// Permits held now.
    pub fn held(&self) -> usize {
        self.state.with(|s| s.held)
    }

    /// The most permits ever held at once (never more than the cap).
    pub fn max_held(&self) -> usize {
        self.state.with(|s| s.max_held)
    }
}
