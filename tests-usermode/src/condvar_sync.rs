//! The engine's `Lock`, `Event`, `Semaphore` and `Thread` over a std-shaped `Mutex` + `Condvar`
//! family: one implementation, instantiated by each user-mode platform (std, shuttle, loom)
//! over its own primitives. The invoking module imports `Mutex`, `MutexGuard` and `Condvar`;
//! the macro's bodies name them unqualified, so they resolve there.
//!
//! Each wrapper keeps the virtual IRQL (docs/review.md W9, `crate::irql`): a lock raises to
//! DISPATCH_LEVEL for its closure, as a spin lock does; waits and joins check their row.

/// Defines `$lock`, `$event`, `$semaphore` and `$thread` (over join handle `$join`).
macro_rules! condvar_primitives {
    ($what:literal, $lock:ident, $event:ident, $semaphore:ident, $thread:ident, $join:ty) => {
        fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
            m.lock().unwrap_or_else(|e| e.into_inner())
        }

        #[doc = concat!("`platform::Lock` over ", $what, "'s mutex.")]
        pub struct $lock<T>(Mutex<T>);

        impl<T: Send> vcdirect::platform::Lock<T> for $lock<T> {
            fn new(value: T) -> Self {
                $lock(Mutex::new(value))
            }
            #[track_caller]
            fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
                use vcdirect::platform::irql::{Call, Irql};
                crate::irql::check(Call::AcquireSpinLock);
                crate::irql::raised(Irql::Dispatch, || f(&mut lock(&self.0)))
            }
        }

        #[doc = concat!("A notification event over ", $what, "'s mutex and condition variable.")]
        pub struct $event {
            set: Mutex<bool>,
            cv: Condvar,
        }

        impl vcdirect::platform::Event for $event {
            fn new() -> Result<Self, vcdirect::Status> {
                if vcdirect::faults::allocation_fails() {
                    return Err(vcdirect::Status::InsufficientResources);
                }
                Ok($event {
                    set: Mutex::new(false),
                    cv: Condvar::new(),
                })
            }
            #[track_caller]
            fn set(&self) {
                crate::irql::check(vcdirect::platform::irql::Call::Signal);
                *lock(&self.set) = true;
                self.cv.notify_all();
            }
            #[track_caller]
            fn wait(&self) {
                crate::irql::check(vcdirect::platform::irql::Call::Wait);
                let mut g = lock(&self.set);
                while !*g {
                    g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
                }
            }
        }

        #[doc = concat!("A counting semaphore over ", $what, "'s mutex and condition variable.")]
        ///
        /// A release wakes a waiter only when one waits: a notify with nobody waiting is a
        /// system call on Linux (futex wake) for nothing.
        pub struct $semaphore {
            /// Permits, and threads waiting for one.
            state: Mutex<(usize, usize)>,
            cv: Condvar,
        }

        impl vcdirect::platform::Semaphore for $semaphore {
            fn new(initial: usize) -> Result<Self, vcdirect::Status> {
                if vcdirect::faults::allocation_fails() {
                    return Err(vcdirect::Status::InsufficientResources);
                }
                Ok($semaphore {
                    state: Mutex::new((initial, 0)),
                    cv: Condvar::new(),
                })
            }
            #[track_caller]
            fn release(&self) {
                crate::irql::check(vcdirect::platform::irql::Call::Signal);
                let waiters = {
                    let mut g = lock(&self.state);
                    g.0 += 1;
                    g.1
                };
                if waiters > 0 {
                    self.cv.notify_one();
                }
            }
            #[track_caller]
            fn acquire(&self) {
                crate::irql::check(vcdirect::platform::irql::Call::Wait);
                let mut g = lock(&self.state);
                while g.0 == 0 {
                    g.1 += 1;
                    g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
                    g.1 -= 1;
                }
                g.0 -= 1;
            }
            #[track_caller]
            fn try_acquire(&self) -> bool {
                crate::irql::check(vcdirect::platform::irql::Call::TryAcquire);
                let mut g = lock(&self.state);
                let took = g.0 > 0;
                if took {
                    g.0 -= 1;
                }
                took
            }
        }

        #[doc = concat!("A joinable ", $what, " thread.")]
        pub struct $thread($join);

        impl vcdirect::platform::Thread for $thread {
            #[track_caller]
            fn join(self) {
                crate::irql::check(vcdirect::platform::irql::Call::JoinThread);
                if let Err(panic) = self.0.join() {
                    std::panic::resume_unwind(panic);
                }
            }
        }
    };
}

pub(crate) use condvar_primitives;
