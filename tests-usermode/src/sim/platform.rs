//! The simulator's platform: shuttle's threads and locks, so one engine thread runs at a time
//! and a seeded scheduler picks the next at every blocking point.

use shuttle::sync::{Condvar, Mutex, MutexGuard};

use vcdirect::platform::{self, Platform, ThreadRole};
use vcdirect::Status;

use super::host::SimHost;
use crate::request::TestRequest;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `platform::Lock` over shuttle's mutex.
pub struct SimLock<T>(Mutex<T>);

impl<T: Send> platform::Lock<T> for SimLock<T> {
    fn new(value: T) -> Self {
        SimLock(Mutex::new(value))
    }
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut lock(&self.0))
    }
}

/// A notification event.
pub struct SimEvent {
    set: Mutex<bool>,
    cv: Condvar,
}

impl platform::Event for SimEvent {
    fn new() -> Self {
        SimEvent {
            set: Mutex::new(false),
            cv: Condvar::new(),
        }
    }
    fn set(&self) {
        *lock(&self.set) = true;
        self.cv.notify_all();
    }
    fn wait(&self) {
        let mut g = lock(&self.set);
        while !*g {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// A counting semaphore.
pub struct SimSemaphore {
    permits: Mutex<usize>,
    cv: Condvar,
}

impl platform::Semaphore for SimSemaphore {
    fn new(initial: usize) -> Self {
        SimSemaphore {
            permits: Mutex::new(initial),
            cv: Condvar::new(),
        }
    }
    fn release(&self) {
        *lock(&self.permits) += 1;
        self.cv.notify_one();
    }
    fn acquire(&self) {
        let mut g = lock(&self.permits);
        while *g == 0 {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        *g -= 1;
    }
}

/// A joinable simulated thread.
pub struct SimThread(shuttle::thread::JoinHandle<()>);

impl platform::Thread for SimThread {
    fn join(self) {
        if let Err(panic) = self.0.join() {
            std::panic::resume_unwind(panic);
        }
    }
}

/// The simulator's platform. Work items each get their own simulated system thread, so a
/// blocked upper completion never holds up another (the bound is the completion stage's).
#[derive(Clone, Default)]
pub struct SimPlatform;

impl Platform for SimPlatform {
    type Lock<T: Send> = SimLock<T>;
    type Event = SimEvent;
    type Semaphore = SimSemaphore;
    type Thread = SimThread;
    type Request = TestRequest;
    type Host = SimHost;

    fn spawn(&self, role: ThreadRole, body: Box<dyn FnOnce() + Send>) -> Result<SimThread, Status> {
        shuttle::thread::Builder::new()
            .name(role.name().into())
            .spawn(body)
            .map(SimThread)
            .map_err(|_| Status::InsufficientResources)
    }

    fn queue_work_item(&self, item: Box<dyn FnOnce() + Send>) {
        shuttle::thread::Builder::new()
            .name("system-worker".into())
            .spawn(item)
            .expect("spawn a simulated system worker");
    }

    fn cpu_count(&self) -> usize {
        2
    }

    /// Crypto is where a real CPU spends time while holding a key reference: let the
    /// scheduler preempt there, so erasure can race it (REVIEW.md R3).
    fn crypto_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        shuttle::thread::yield_now();
        let r = f();
        shuttle::thread::yield_now();
        r
    }
}

/// The name of the running simulated thread.
pub fn current_thread_name() -> String {
    shuttle::thread::current().name().unwrap_or("").to_string()
}
