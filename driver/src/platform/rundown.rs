//! Rundown protection: users acquire, one closer waits until they are all gone.
//!
//! The engine's own primitive (Wine stubs Ex*RundownProtection), used for key erasure
//! (docs/review.md R3) and the dismount drain (R13).

use super::{Event, Lock, Platform};
use crate::Status;

struct State {
    active: usize,
    closed: bool,
}

/// Counts active users; [`Rundown::close_and_wait`] refuses new ones and waits for the rest.
pub struct Rundown<P: Platform> {
    state: P::Lock<State>,
    drained: P::Event,
}

/// Proof of an acquired reference; released on drop.
pub struct RundownGuard<'a, P: Platform> {
    rundown: &'a Rundown<P>,
}

impl<P: Platform> Rundown<P> {
    /// An open rundown with no users, or STATUS_INSUFFICIENT_RESOURCES when its event's
    /// allocation fails (W6).
    pub fn new() -> Result<Self, Status> {
        Ok(Rundown {
            state: P::Lock::new(State {
                active: 0,
                closed: false,
            }),
            drained: P::Event::new()?,
        })
    }

    /// Takes a reference, or `None` once closing has begun.
    pub fn acquire(&self) -> Option<RundownGuard<'_, P>> {
        self.state.with(|s| {
            if s.closed {
                None
            } else {
                s.active += 1;
                Some(RundownGuard { rundown: self })
            }
        })
    }

    /// Takes a reference that is not tied to a borrow (released with [`Rundown::exit`]), for
    /// state that travels between threads. False once closing has begun.
    pub fn enter(&self) -> bool {
        self.state.with(|s| {
            if s.closed {
                false
            } else {
                s.active += 1;
                true
            }
        })
    }

    /// Releases a reference taken with [`Rundown::enter`].
    pub fn exit(&self) {
        self.release();
    }

    /// Number of references held now.
    pub fn active(&self) -> usize {
        self.state.with(|s| s.active)
    }

    /// True once closing has begun.
    pub fn is_closed(&self) -> bool {
        self.state.with(|s| s.closed)
    }

    /// Refuses new references without waiting for the existing ones.
    pub fn close(&self) {
        self.state.with(|s| s.closed = true);
    }

    /// Refuses new references, then blocks until every existing one was released.
    pub fn close_and_wait(&self) {
        let done = self.state.with(|s| {
            s.closed = true;
            s.active == 0
        });
        if !done {
            self.drained.wait();
        }
    }

    fn release(&self) {
        let last = self.state.with(|s| {
            s.active -= 1;
            s.closed && s.active == 0
        });
        if last {
            self.drained.set();
        }
    }
}

impl<P: Platform> Drop for RundownGuard<'_, P> {
    fn drop(&mut self) {
        self.rundown.release();
    }
}
