//! Shutdown's dismount of every volume, bounded (W1, R13).
//!
//! IRP_MJ_SHUTDOWN dismounts every volume, forced, before the system goes down. A volume
//! whose host stopped answering (a network file) never finishes its drain (R13 forbids
//! abandoning its I/O), so shutdown must not wait for it without bound: the dismounts run on
//! a thread of this driver, and shutdown waits for that thread at most [`SHUTDOWN_WAIT_MS`]
//! (a finite wait on its own thread, never on an object another driver owns). A volume whose
//! dismount has not finished by then stays as it is: nothing it uses is freed (the thread
//! keeps its references and runs on), it is logged, and shutdown goes on. Its admission stays
//! open: a volume left may only be waiting (a host whose nested volume is still dismounting, or
//! a slow but healthy chain), and the system flushes its file systems after this returns;
//! refusing those writes would lose the data of a healthy volume. A volume whose host is dead
//! can then still hold up the file systems' own shutdown flush (only Windows shows how long).

use crate::faults::{self, Fault};
use crate::Status;

/// How long shutdown waits for its dismount thread: 30 s (a forced dismount whose file
/// system keeps refusing retries for up to about 20 s, `crate::dismount::DISMOUNT_ATTEMPTS`).
pub const SHUTDOWN_WAIT_MS: u32 = 30_000;

/// What shutdown needs of the glue.
pub trait ShutdownSide {
    /// A thread of this driver.
    type Worker;
    /// Starts the thread that dismounts every volume (forced, host relation first) and waits
    /// for the dismount IOCTLs' threads.
    fn start(&self) -> Result<Self::Worker, Status>;
    /// Waits for `worker` at most `ms` milliseconds (`None`: without bound); true when it
    /// finished.
    fn wait(&self, worker: &Self::Worker, ms: Option<u32>) -> bool;
    /// No thread could be started: runs the same dismounts on the calling thread.
    fn run_here(&self);
    /// Keeps a worker that has not finished: it runs on and nothing it uses is freed.
    fn keep(&self, worker: Self::Worker);
    /// Calls `f` with the id of every volume still in the table.
    fn each_left(&self, f: &mut dyn FnMut(u32));
    /// Logs one volume left as it is.
    fn log_left(&self, id: u32, waited_ms: u32);
}

/// How shutdown ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every dismount finished within the wait.
    Finished,
    /// No thread could be started; the dismounts ran on shutdown's own thread.
    Inline,
    /// The wait ran out: this many volumes were left as they are (logged).
    Left(usize),
}

/// Runs shutdown's dismount of every volume on `side`'s thread and waits for it at most
/// `wait_ms`.
pub fn shutdown<S: ShutdownSide>(side: &S, wait_ms: u32) -> Outcome {
    let worker = match side.start() {
        Ok(worker) => worker,
        Err(_) => {
            side.run_here();
            return Outcome::Inline;
        }
    };
    // The bug this bound replaces: shutdown held hostage by one volume's dismount.
    let bound = (!faults::is_on(Fault::ControlPathHeldByHost)).then_some(wait_ms);
    if side.wait(&worker, bound) {
        return Outcome::Finished;
    }
    side.keep(worker);
    let mut left = 0;
    side.each_left(&mut |id| {
        side.log_left(id, wait_ms);
        left += 1;
    });
    Outcome::Left(left)
}

/// What the forced dismount of every volume needs of the glue (shutdown's thread, Unload).
pub trait DismountAll {
    /// A volume taken for its dismount (marked busy in the table).
    type Volume;
    /// Under the table's lock: [`crate::control::order::decide`] over every volume in the
    /// table; a volume chosen is marked busy and returned.
    fn next(&self) -> Picked<Self::Volume>;
    /// Starts the volume's forced dismount on a thread of its own (kept by the glue until
    /// [`DismountAll::join_started`]); gives the volume back when no thread could be started.
    fn start(&self, volume: Self::Volume) -> Result<(), Self::Volume>;
    /// Runs the volume's forced dismount on the calling thread.
    fn dismount_here(&self, volume: Self::Volume);
    /// Waits a little before asking again ([`Picked::Wait`]).
    fn pause(&self);
    /// Joins every thread [`DismountAll::start`] started.
    fn join_started(&self);
}

/// [`DismountAll::next`]'s answer.
#[derive(Debug)]
pub enum Picked<V> {
    /// Dismount this volume now.
    Dismount(V),
    /// Only hosts of volumes being dismounted elsewhere are left: ask again later.
    Wait,
    /// Nothing left that no dismount runs for.
    Done,
}

/// Dismounts every volume, forced, each on a thread of its own as soon as no volume still in
/// the table lives on it (nested volumes first, `crate::control::order`): one volume whose
/// dismount never finishes (its host stopped answering) holds up only the volumes its host
/// lives on, never the others. Returns once every started dismount has finished.
pub fn dismount_all<D: DismountAll>(side: &D) {
    loop {
        match side.next() {
            Picked::Dismount(volume) => {
                if let Err(volume) = side.start(volume) {
                    side.dismount_here(volume);
                }
            }
            Picked::Wait => side.pause(),
            Picked::Done => break,
        }
    }
    side.join_started();
}
