//! A blocking FIFO of waiting upper requests, linked through the requests themselves.
//!
//! Owns: the order in which waiting requests are taken, the stops that end its consumers, and
//! taking a request out of the middle (a cancel routine). Allocates nothing per request and is
//! never full: the requests are linked in the platform's [`RequestList`] (W6), and what the
//! engine keeps with each is its [`super::RequestNote`].
//! Never: looks inside a request beyond the pick its caller gives.

use super::{Event, Lock, Platform, RequestList, Semaphore, UpperRequest};
use crate::faults::{self, Fault};
use crate::Status;

struct Fifo<R: UpperRequest> {
    list: R::List,
    /// Stops queued (taken once the list is empty: they are queued after every request).
    stops: usize,
    /// Requests ever appended, and ever taken out (by a consumer or `take_first`).
    pushed: u64,
    taken: u64,
}

/// What a consumer takes next.
pub enum Taken<R> {
    /// The oldest waiting request.
    Request(R),
    /// A stop: the consumer ends.
    Stop,
}

/// Producers `push` (never block, never allocate); consumers `pop` (block until a request or
/// a stop is there).
pub struct RequestQueue<P: Platform> {
    fifo: P::Lock<Fifo<P::Request>>,
    /// One permit per push or stop (a request taken out by `take_first` leaves its permit,
    /// which a consumer then skips).
    ready: P::Semaphore,
}

impl<P: Platform> RequestQueue<P> {
    /// An empty queue (allocates only its semaphore), or STATUS_INSUFFICIENT_RESOURCES when
    /// that allocation fails (W6).
    pub fn new() -> Result<Self, Status> {
        Ok(RequestQueue {
            fifo: P::Lock::new(Fifo {
                list: <P::Request as UpperRequest>::List::new(),
                stops: 0,
                pushed: 0,
                taken: 0,
            }),
            ready: P::Semaphore::new(0)?,
        })
    }

    /// Arms `request`'s cancel hook and appends it, under the queue's lock, so its cancel
    /// routine (which takes requests out under the same lock) finds it here or not at all;
    /// wakes one consumer. Hands `request` back, not queued, when it was already cancelled.
    pub fn push_armed(&self, request: P::Request) -> Result<(), P::Request> {
        self.armed(request, false)
    }

    /// As [`push_armed`](Self::push_armed), before every request queued: a request a consumer
    /// took from the head and could not serve goes back where it was, counted as not taken.
    pub fn push_front_armed(&self, request: P::Request) -> Result<(), P::Request> {
        self.armed(request, true)
    }

    fn armed(&self, mut request: P::Request, front: bool) -> Result<(), P::Request> {
        let queued = self.fifo.with(|f| {
            if !request.arm_cancel() {
                return Err(request);
            }
            // A request put back counts as not taken (it was taken from the head), so `counts`
            // keeps its meaning: once `taken` reaches `n`, the `n` queued first have left.
            match front {
                true => {
                    f.list.push_front(request);
                    debug_assert!(f.taken > 0, "a request put back was never taken");
                    f.taken = f.taken.saturating_sub(1);
                }
                false => {
                    f.list.push_back(request);
                    f.pushed += 1;
                }
            }
            Ok(())
        });
        if queued.is_ok() {
            self.ready.release();
        }
        queued
    }

    /// Appends `request` and wakes one consumer.
    pub fn push(&self, request: P::Request) {
        self.fifo.with(|f| {
            f.list.push_back(request);
            f.pushed += 1;
        });
        self.ready.release();
    }

    /// Queues one stop, taken after every request queued before.
    pub fn stop(&self) {
        self.fifo.with(|f| f.stops += 1);
        self.ready.release();
    }

    /// Takes the oldest request, or a stop once no request waits; blocks until one is there.
    pub fn pop(&self) -> Taken<P::Request> {
        loop {
            self.wait();
            if let Some(taken) = self.take_waited() {
                return taken;
            }
        }
    }

    /// Blocks until a request or a stop is there for this consumer (one push's permit): the
    /// first half of [`pop`](Self::pop), for a consumer that must take something else (a host
    /// permit) before it takes the request ([`take_waited`](Self::take_waited)).
    pub fn wait(&self) {
        self.ready.acquire();
    }

    /// The second half of [`pop`](Self::pop), after [`wait`](Self::wait): the oldest request,
    /// or a stop once no request waits (`None`: its permit was a request taken out since, by
    /// `take_first` or [`try_take_front_if`](Self::try_take_front_if)).
    pub fn take_waited(&self) -> Option<Taken<P::Request>> {
        // The W9 fault switch: a wait inside the spin lock (on a signalled event, so the
        // faulted run records the violation and goes on instead of hanging).
        // (Test-only: an event that cannot be made skips the violation.)
        let signalled = faults::is_on(Fault::W9WaitInsideLock)
            .then(|| P::Event::new().ok())
            .flatten()
            .inspect(|event| event.set());
        self.fifo.with(|f| {
            if let Some(event) = &signalled {
                event.wait();
            }
            Self::take(f)
        })
    }

    /// Takes the oldest request, without blocking, when `pick` selects it and a push's permit
    /// is still unclaimed (no consumer between [`wait`](Self::wait) and
    /// [`take_waited`](Self::take_waited) counts on it). Never a stop.
    pub fn try_take_front_if(&self, pick: impl FnOnce(&P::Request) -> bool) -> Option<P::Request> {
        if !self.ready.try_acquire() {
            return None;
        }
        let mut pick = Some(pick);
        let taken = self.fifo.with(|f| {
            let request = f
                .list
                .pop_front_if(&mut |request| pick.take().is_some_and(|p| p(request)));
            f.taken += u64::from(request.is_some());
            request
        });
        if taken.is_none() && !faults::is_on(Fault::CarriedCountKept) {
            // The permit goes back to whoever it was for.
            self.ready.release();
        }
        taken
    }

    /// The oldest request, or a stop once no request waits (`None`: the permit of a request
    /// `take_first` took out).
    fn take(f: &mut Fifo<P::Request>) -> Option<Taken<P::Request>> {
        match f.list.pop_front() {
            Some(request) => {
                f.taken += 1;
                Some(Taken::Request(request))
            }
            None if f.stops > 0 => {
                f.stops -= 1;
                Some(Taken::Stop)
            }
            // The permit of a request `take_first` took out.
            None => None,
        }
    }

    /// Takes out the oldest waiting request `pick` selects (for the cancel routine of a
    /// queued request).
    pub fn take_first(&self, mut pick: impl FnMut(&P::Request) -> bool) -> Option<P::Request> {
        self.fifo.with(|f| {
            let request = f.list.remove_first(&mut pick);
            f.taken += u64::from(request.is_some());
            request
        })
    }

    /// Runs `f` under the queue's lock if no request waits (`None`: one does, `f` did not
    /// run): whatever `f` decides, no request was queued before it that it could overtake.
    /// `f` must only take short locks (it runs inside this one).
    pub fn when_empty<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        self.fifo.with(|fifo| fifo.list.is_empty().then(f))
    }

    /// Requests ever queued, and ever taken out (by a consumer or a cancel): a request queued
    /// when `queued` read `n` has been taken once `taken` reaches `n`, as the queue is FIFO.
    pub fn counts(&self) -> (u64, u64) {
        self.fifo.with(|f| (f.pushed, f.taken))
    }

    /// Requests waiting, and what `look` says of the oldest (false when none waits).
    pub fn len_and_head(&self, look: impl FnOnce(&P::Request) -> bool) -> (usize, bool) {
        let mut look = Some(look);
        self.fifo.with(|f| {
            let mut seen = false;
            // Picks nothing: only looks at the head.
            let picked = f.list.pop_front_if(&mut |request| {
                seen = look.take().is_some_and(|l| l(request));
                false
            });
            debug_assert!(picked.is_none(), "a look took a request");
            (f.list.len(), seen)
        })
    }

    /// Requests waiting.
    pub fn len(&self) -> usize {
        self.fifo.with(|f| f.list.len())
    }

    /// True when no request waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
