//! The control path's portable decisions (`vcdirect::control`), with models of the glue's locks
//! and threads: the forced dismount of every volume follows the host relation (W1), a stalled
//! host open blocks no other control IOCTL (R13), erase-keys refuses a mount claimed before it
//! (R3), shutdown waits a bounded time for its own dismount thread (W1, R13) and dismounts no
//! volume under the host file of a mount it refused (W1), and the dismount sequence holds the
//! last reference to the volume device before deleting it (W1). Each check is shown to fail with the fault switch that
//! reintroduces its bug; the switches are global, so the tests take one lock.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use vcdirect::control::last_reference::delete_when_sole;
use vcdirect::control::order::{decide, Candidate, Next};
use vcdirect::control::pending::{
    self, ControlLocks, OpenedHost, Pending, KEYS_ERASED_MEANWHILE, LETTER_CLAIMED, SHUTTING_DOWN,
};
use vcdirect::control::shutdown::{
    dismount_all, shutdown, DismountAll, Outcome, Picked, ShutdownSide,
};
use vcdirect::dismount::{self, Teardown, VolumeAbove};
use vcdirect::faults::{set_faults, Fault};
use vcdirect::Status;

/// The fault switches are global: one test at a time in this binary.
static SWITCHES: Mutex<()> = Mutex::new(());

fn switches() -> MutexGuard<'static, ()> {
    let guard = SWITCHES.lock().unwrap_or_else(|e| e.into_inner());
    set_faults(&[]);
    guard
}

/// How long a control IOCTL may take in the models before it counts as blocked.
const ANSWER: Duration = Duration::from_secs(2);

// ---------------------------------------------------------------- order (W1)

/// A volume of the table: its id, the id of the volume its host lives on, busy, how many
/// volumes that left the table still close their host file on it.
#[derive(Clone, Debug)]
struct Vol {
    id: u32,
    on: Option<u32>,
    busy: bool,
    closing: u32,
}

fn vol(id: u32, on: Option<u32>) -> Vol {
    Vol {
        id,
        on,
        busy: false,
        closing: 0,
    }
}

impl Candidate for Vol {
    fn id(&self) -> u32 {
        self.id
    }
    fn busy(&self) -> bool {
        self.busy
    }
    fn hosted_on(&self, other: &Self) -> bool {
        self.on == Some(other.id)
    }
    fn hosts_one_closing(&self) -> bool {
        self.closing > 0
    }
}

/// Which running dismount finishes when the loop has to wait.
#[derive(Clone, Copy, Debug)]
enum Finish {
    Oldest,
    Newest,
}

/// The glue's forced-dismount loop over the table (`ForcedAll`): each pick stays in the
/// table, busy, until its thread finished; a thread finishes only when the loop has to wait
/// (the slowest threads: the most room for a wrong start), in two steps as in the glue: its
/// entry leaves the table (`delete_device`), then its host file closes (the device's drop),
/// the volume its host lives on counting it as closing meanwhile. Returns the start order and
/// the violations: a volume started while one whose host lives on it was still in the table
/// (running or not yet dismounted) or still closing its host file, a loop that waits with
/// nothing running, volumes never dismounted.
fn run_forced(volumes: &[Vol], finish: Finish) -> (Vec<u32>, Vec<String>) {
    let mut table = volumes.to_vec();
    let mut running: Vec<u32> = Vec::new();
    // Left the table, host file still open: (id, the id its host lives on).
    let mut closing: Vec<(u32, Option<u32>)> = Vec::new();
    let mut started = Vec::new();
    let mut v = Vec::new();
    for _ in 0..10_000 {
        match decide(&table) {
            Next::Dismount(i) => {
                let host = table[i].id;
                for x in table.iter().filter(|x| x.on == Some(host)) {
                    let how = if x.busy {
                        "still ran"
                    } else {
                        "was not dismounted"
                    };
                    v.push(format!(
                        "W1: VcVolume{host} started while VcVolume{}, whose host lives on it, {how}",
                        x.id
                    ));
                }
                for (x, _) in closing.iter().filter(|(_, on)| *on == Some(host)) {
                    v.push(format!(
                        "W1: VcVolume{host} started while VcVolume{x} still closed its host file on it"
                    ));
                }
                table[i].busy = true;
                running.push(host);
                started.push(host);
            }
            next => {
                if let Some((_, on)) = closing.pop() {
                    // The device's drop closes the host: its host volume may go now.
                    if let Some(h) = table.iter_mut().find(|h| Some(h.id) == on) {
                        h.closing -= 1;
                    }
                    continue;
                }
                let id = match finish {
                    _ if running.is_empty() => {
                        if next == Next::Wait {
                            v.push("W1: the loop waits with nothing running".to_string());
                        }
                        break;
                    }
                    Finish::Oldest => running.remove(0),
                    Finish::Newest => running.pop().unwrap(),
                };
                let at = table.iter().position(|x| x.id == id).unwrap();
                let gone = table.remove(at);
                if let Some(h) = table.iter_mut().find(|h| Some(h.id) == gone.on) {
                    h.closing += 1;
                }
                closing.push((gone.id, gone.on));
            }
        }
    }
    if started.len() != volumes.len() {
        v.push(format!(
            "W1: {} of {} volumes dismounted",
            started.len(),
            volumes.len()
        ));
    }
    (started, v)
}

/// Every volume finished its dismount before the volume its host lives on (an order of
/// finished dismounts): the violations.
fn check_order(volumes: &[Vol], order: &[u32]) -> Vec<String> {
    let mut v = Vec::new();
    if order.len() != volumes.len() {
        v.push(format!(
            "W1: {} of {} volumes dismounted",
            order.len(),
            volumes.len()
        ));
    }
    for x in volumes {
        let Some(host) = x.on else { continue };
        let at = |id| order.iter().position(|o| *o == id);
        if let (Some(a), Some(b)) = (at(x.id), at(host)) {
            if a > b {
                v.push(format!(
                    "W1: VcVolume{host} dismounted before VcVolume{}, whose host lives on it",
                    x.id
                ));
            }
        }
    }
    v
}

/// The table: (volumes, expected order).
fn order_table() -> Vec<(&'static str, Vec<Vol>, Vec<u32>)> {
    vec![
        ("none", vec![], vec![]),
        (
            "unrelated: highest id first",
            vec![vol(3, None), vol(9, None), vol(5, None)],
            vec![9, 5, 3],
        ),
        (
            "nested mounted after its host",
            vec![vol(1, None), vol(2, Some(1))],
            vec![2, 1],
        ),
        // Ids start at a random value per load and wrap: the nested volume can have the
        // lower id; highest id first would take its host away first.
        (
            "nested with the lower id",
            vec![vol(7, None), vol(4, Some(7))],
            vec![4, 7],
        ),
        (
            "wrapped ids",
            vec![vol(u32::MAX, None), vol(0, Some(u32::MAX))],
            vec![0, u32::MAX],
        ),
        (
            "a chain of three",
            vec![vol(2, Some(5)), vol(5, Some(9)), vol(9, None)],
            vec![2, 5, 9],
        ),
        (
            "two on one host, one apart",
            vec![vol(1, None), vol(3, Some(1)), vol(2, Some(1)), vol(8, None)],
            vec![8, 3, 2, 1],
        ),
        // C on A on B with ids 3 <- 2 <- 1: after 3 starts, no free volume qualifies; 2 (free,
        // hosting the running 3) must wait, not start as the highest of a "cycle".
        (
            "a chain of three, host ids lowest",
            vec![vol(1, None), vol(2, Some(1)), vol(3, Some(2))],
            vec![3, 2, 1],
        ),
        (
            "a chain of five, mixed ids, one apart",
            vec![
                vol(4, None),
                vol(9, Some(4)),
                vol(2, Some(9)),
                vol(7, Some(2)),
                vol(1, Some(7)),
                vol(5, None),
            ],
            vec![5, 1, 7, 2, 9, 4],
        ),
        (
            "two chains of three",
            vec![
                vol(1, None),
                vol(2, Some(1)),
                vol(3, Some(2)),
                vol(10, None),
                vol(11, Some(10)),
                vol(12, Some(11)),
            ],
            vec![12, 3, 11, 2, 10, 1],
        ),
        (
            "a host of another's host",
            vec![
                vol(10, None),
                vol(4, Some(6)),
                vol(6, Some(10)),
                vol(12, None),
            ],
            vec![12, 4, 6, 10],
        ),
    ]
}

#[test]
fn w1_forced_dismount_order_follows_the_host_relation() {
    let _g = switches();
    for (name, volumes, want) in order_table() {
        for finish in [Finish::Oldest, Finish::Newest] {
            let (order, violations) = run_forced(&volumes, finish);
            assert_eq!(violations, Vec::<String>::new(), "{name}, {finish:?}");
            if let Finish::Oldest = finish {
                assert_eq!(order, want, "{name}");
            }
        }
    }
    // A host whose nested volume a dismount IOCTL is dismounting waits for it; a free one
    // goes meanwhile; nothing left but busy ones: done.
    let mut busy_nested = vec![vol(1, None), vol(2, Some(1)), vol(3, None)];
    busy_nested[1].busy = true;
    assert_eq!(decide(&busy_nested), Next::Dismount(2));
    busy_nested[2].busy = true;
    assert_eq!(decide(&busy_nested), Next::Wait);
    busy_nested[0].busy = true;
    assert_eq!(decide(&busy_nested), Next::Done);
    // C on A on B (3 <- 2 <- 1), C busy: A hosts the running C, B hosts the free A; wait.
    let mut chain = vec![vol(1, None), vol(2, Some(1)), vol(3, Some(2))];
    chain[2].busy = true;
    assert_eq!(decide(&chain), Next::Wait);
    // C left the table but still closes its host file on A: wait too.
    chain.remove(2);
    chain[1].closing = 1;
    assert_eq!(decide(&chain), Next::Wait);
    chain[1].closing = 0;
    assert_eq!(decide(&chain), Next::Dismount(1));
    // A cycle (no real host relation makes one) never stalls the loop.
    let cycle = vec![vol(1, Some(2)), vol(2, Some(1))];
    assert_eq!(run_forced(&cycle, Finish::Oldest).0.len(), 2);
}

/// Every violation of the order table's runs, both finishing orders.
fn order_failures() -> Vec<String> {
    order_table()
        .into_iter()
        .flat_map(|(_, volumes, _)| {
            [Finish::Oldest, Finish::Newest]
                .into_iter()
                .flat_map(move |f| run_forced(&volumes, f).1)
        })
        .collect()
}

#[test]
fn w1_checks_catch_a_forced_dismount_by_id() {
    let _g = switches();
    set_faults(&[Fault::W1ForcedOrderById]);
    let failures = order_failures();
    set_faults(&[]);
    assert!(
        failures.iter().any(|f| f
            == "W1: VcVolume7 started while VcVolume4, whose host lives on it, was not dismounted"),
        "{failures:?}"
    );
}

#[test]
fn w1_checks_catch_a_host_started_while_a_volume_on_it_runs() {
    let _g = switches();
    set_faults(&[Fault::W1HostStartedWhileNestedRuns]);
    let failures = order_failures();
    set_faults(&[]);
    for want in [
        "W1: VcVolume2 started while VcVolume3, whose host lives on it, still ran",
        "W1: VcVolume7 started while VcVolume4 still closed its host file on it",
    ] {
        assert!(failures.iter().any(|f| f == want), "{want}: {failures:?}");
    }
}

// ------------------------------------------------- a stalled host open (R13)

/// The glue's control mutex and volume table, with the mounts in progress beside it.
#[derive(Default)]
struct Control {
    mutex: Mutex<()>,
    table: Mutex<(Vec<(u32, char)>, Pending)>,
}

impl ControlLocks for Control {
    fn serialized<R>(&self, f: impl FnOnce() -> R) -> R {
        let _held = self.mutex.lock().unwrap();
        f()
    }
    fn pending<R>(&self, f: impl FnOnce(&mut Pending) -> R) -> R {
        f(&mut self.table.lock().unwrap().1)
    }
    // These models' hosts live on none of our volumes.
    fn hold_host(&self, _host: usize) -> Option<u32> {
        None
    }
    fn release_host(&self, _id: u32) {}
}

/// An opened host; counts its closes.
struct Host(Arc<Mutex<u32>>);

impl OpenedHost for Host {
    fn host_volume(&self) -> Option<usize> {
        None
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        *self.0.lock().unwrap() += 1;
    }
}

impl Control {
    fn list(&self) -> Vec<u32> {
        self.serialized(|| self.table.lock().unwrap().0.iter().map(|e| e.0).collect())
    }
    fn status(&self, id: u32) -> Result<char, Status> {
        self.serialized(|| {
            let t = self.table.lock().unwrap();
            t.0.iter()
                .find(|e| e.0 == id)
                .map(|e| e.1)
                .ok_or(Status::DeviceNotReady)
        })
    }
    fn dismount(&self, id: u32) -> Result<(), Status> {
        self.serialized(|| {
            let mut t = self.table.lock().unwrap();
            let at =
                t.0.iter()
                    .position(|e| e.0 == id)
                    .ok_or(Status::DeviceNotReady)?;
            t.0.remove(at);
            Ok(())
        })
    }
    /// Erase-keys: the table's volumes counted as erased; mounts claimed before are refused.
    fn erase_keys(&self) -> usize {
        self.serialized(|| {
            let mut t = self.table.lock().unwrap();
            t.1.keys_erased();
            t.0.len()
        })
    }
    fn shut(&self) -> u32 {
        self.serialized(|| self.pending(|p| p.close(SHUTTING_DOWN)))
    }
    /// The glue's mount: the letter checked in the table, then `pending::mount`.
    fn mount(
        &self,
        id: u32,
        letter: char,
        open: impl FnOnce() -> Result<Host, Status>,
    ) -> Result<u32, Status> {
        pending::mount(
            self,
            Some(letter),
            || {
                let taken = self.table.lock().unwrap().0.iter().any(|e| e.1 == letter);
                if taken {
                    Err(LETTER_CLAIMED)
                } else {
                    Ok(())
                }
            },
            open,
            |host: Host| {
                // The published volume keeps its host.
                std::mem::forget(host);
                self.table.lock().unwrap().0.push((id, letter));
                Ok(id)
            },
        )
    }
}

/// Runs `f` on a thread; `None` when it has not answered within [`ANSWER`].
fn within<R: Send + 'static>(
    control: &Arc<Control>,
    f: impl FnOnce(&Control) -> R + Send + 'static,
) -> Option<R> {
    let (tx, rx) = mpsc::channel();
    let c = Arc::clone(control);
    thread::spawn(move || {
        let _ = tx.send(f(&c));
    });
    rx.recv_timeout(ANSWER).ok()
}

/// A host whose open blocks until released.
#[derive(Default)]
struct Stall {
    released: Mutex<bool>,
    cv: Condvar,
}

impl Stall {
    fn wait(&self) {
        let mut r = self.released.lock().unwrap();
        while !*r {
            r = self.cv.wait(r).unwrap();
        }
    }
    fn release(&self) {
        *self.released.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

/// A mount whose host open stalls (until released), then list, status, another mount, a
/// mount of the stalled mount's letter, a dismount and shutdown, each within [`ANSWER`]; then
/// the stalled open returns after shutdown: its mount is refused and its host closed. The
/// violations.
fn check_stalled_open() -> Vec<String> {
    let mut v = Vec::new();
    let control = Arc::new(Control::default());
    let stall = Arc::new(Stall::default());
    let closes = Arc::new(Mutex::new(0));
    let (opening_tx, opening_rx) = mpsc::channel();
    let stalled = {
        let (c, s, closes) = (
            Arc::clone(&control),
            Arc::clone(&stall),
            Arc::clone(&closes),
        );
        thread::spawn(move || {
            c.mount(1, 'S', move || {
                let _ = opening_tx.send(());
                s.wait();
                Ok(Host(closes))
            })
        })
    };
    opening_rx
        .recv_timeout(ANSWER)
        .expect("the stalled mount reached its open");
    let blocked = |what: &str| format!("R13: {what} waited for a stalled host's open");
    match within(&control, |c| c.list()) {
        Some(list) if list.is_empty() => {}
        Some(list) => v.push(format!("R13: list showed {list:?} during a mount")),
        None => {
            v.push(blocked("list"));
            // Seen: let the stalled open return, so the rest does not wait in turn.
            stall.release();
        }
    }
    let quick = Arc::new(Mutex::new(0));
    let q = Arc::clone(&quick);
    match within(&control, move |c| c.mount(2, 'T', || Ok(Host(q)))) {
        Some(Ok(2)) => {}
        Some(other) => v.push(format!("R13: another mount answered {other:?}")),
        None => v.push(blocked("another mount")),
    }
    if let Some(status) = within(&control, |c| c.status(2)) {
        if status != Ok('T') {
            v.push(format!("R13: status answered {status:?}"));
        }
    } else {
        v.push(blocked("status"));
    }
    // The stalled mount's letter is claimed: refused before any open.
    let opened = Arc::new(Mutex::new(false));
    let o = Arc::clone(&opened);
    let closes2 = Arc::clone(&closes);
    match within(&control, move |c| {
        c.mount(3, 'S', move || {
            *o.lock().unwrap() = true;
            Ok(Host(closes2))
        })
    }) {
        Some(Err(LETTER_CLAIMED)) if !*opened.lock().unwrap() => {}
        Some(other) => v.push(format!(
            "R13: a mount of a claimed letter answered {other:?}"
        )),
        None => v.push(blocked("a mount of the claimed letter")),
    }
    match within(&control, |c| c.dismount(2)) {
        Some(Ok(())) => {}
        Some(other) => v.push(format!("R13: dismount answered {other:?}")),
        None => v.push(blocked("dismount")),
    }
    match within(&control, |c| c.shut()) {
        Some(1) => {}
        Some(n) => v.push(format!("R13: shutdown found {n} mounts in progress, not 1")),
        None => v.push(blocked("shutdown")),
    }
    stall.release();
    let result = stalled.join().unwrap();
    // After the fault's run the mount published before shutdown closed the table.
    if v.is_empty() {
        if result != Err(SHUTTING_DOWN) {
            v.push(format!(
                "R13: the stalled mount ended with {result:?} after shutdown"
            ));
        }
        if *closes.lock().unwrap() != 1 {
            v.push("R13: the refused mount did not close its host".into());
        }
        if !control.list().is_empty() {
            v.push("R13: a volume was published after shutdown".into());
        }
        if control.mount(4, 'U', || Ok(Host(Arc::new(Mutex::new(0))))) != Err(SHUTTING_DOWN) {
            v.push("R13: a mount was claimed after shutdown".into());
        }
    }
    v
}

#[test]
fn r13_a_stalled_host_open_blocks_no_other_control_ioctl() {
    let _g = switches();
    assert_eq!(check_stalled_open(), Vec::<String>::new());
    // Without shutdown the stalled mount publishes once its open returns, and its letter's
    // claim ends: a second mount of the letter is then refused by the table.
    let control = Arc::new(Control::default());
    let closes = Arc::new(Mutex::new(0));
    assert_eq!(
        control.mount(5, 'V', || Ok(Host(Arc::clone(&closes)))),
        Ok(5)
    );
    assert_eq!(
        control.mount(6, 'V', || Ok(Host(Arc::clone(&closes)))),
        Err(LETTER_CLAIMED)
    );
    assert_eq!(control.pending(|p| p.in_progress()), 0);
    // A failed open ends the claim: the letter is free again.
    assert_eq!(
        control.mount(7, 'W', || Err(Status::DeviceNotReady)),
        Err(Status::DeviceNotReady)
    );
    assert_eq!(
        control.mount(8, 'W', || Ok(Host(Arc::clone(&closes)))),
        Ok(8)
    );
}

#[test]
fn r13_checks_catch_a_mount_that_opens_its_host_under_the_control_mutex() {
    let _g = switches();
    set_faults(&[Fault::ControlPathHeldByHost]);
    let failures = check_stalled_open();
    set_faults(&[]);
    assert!(
        failures
            .iter()
            .any(|f| f == "R13: list waited for a stalled host's open"),
        "{failures:?}"
    );
}

/// A mount whose host open stalls; erase-keys runs meanwhile (it answers: no volume in the
/// table yet); the open returns. The mount claimed before erase-keys must be refused at its
/// publish with [`KEYS_ERASED_MEANWHILE`] (its volume holds a live key erase-keys did not
/// see) and close its host; one claimed after erase-keys publishes. The violations.
fn check_erase_keys_during_a_mount() -> Vec<String> {
    let mut v = Vec::new();
    let control = Arc::new(Control::default());
    let stall = Arc::new(Stall::default());
    let closes = Arc::new(Mutex::new(0));
    let (opening_tx, opening_rx) = mpsc::channel();
    let stalled = {
        let (c, s, closes) = (
            Arc::clone(&control),
            Arc::clone(&stall),
            Arc::clone(&closes),
        );
        thread::spawn(move || {
            c.mount(1, 'S', move || {
                let _ = opening_tx.send(());
                s.wait();
                Ok(Host(closes))
            })
        })
    };
    if opening_rx.recv_timeout(ANSWER).is_err() {
        v.push("R3: the stalled mount never reached its open".into());
    }
    // Erase-keys answers (no volume in the table yet) while the mount opens its host.
    match within(&control, |c| c.erase_keys()) {
        Some(0) => {}
        other => v.push(format!("R3: erase-keys answered {other:?} during a mount")),
    }
    stall.release();
    // The mount claimed before erase-keys does not publish with its live key.
    match stalled.join().unwrap() {
        Err(KEYS_ERASED_MEANWHILE) => {
            if *closes.lock().unwrap() != 1 {
                v.push("R3: the refused mount kept its host".into());
            }
        }
        Ok(_) => v.push("R3: a mount claimed before erase-keys published after it".into()),
        Err(other) => v.push(format!(
            "R3: the mount during erase-keys ended with {other:?}"
        )),
    }
    if v.is_empty() {
        // A mount claimed after erase-keys publishes (its letter free again).
        let after = control.mount(2, 'S', || Ok(Host(Arc::new(Mutex::new(0)))));
        if after != Ok(2) {
            v.push(format!("R3: a mount after erase-keys answered {after:?}"));
        }
    }
    v
}

#[test]
fn r3_erase_keys_refuses_a_mount_claimed_before_it() {
    let _g = switches();
    assert_eq!(check_erase_keys_during_a_mount(), Vec::<String>::new());
}

#[test]
fn r3_checks_catch_a_mount_published_after_erase_keys() {
    let _g = switches();
    set_faults(&[Fault::R3EraseGenerationIgnored]);
    let failures = check_erase_keys_during_a_mount();
    set_faults(&[]);
    assert!(
        failures
            .iter()
            .any(|f| f == "R3: a mount claimed before erase-keys published after it"),
        "{failures:?}"
    );
}

/// A published volume whose undo (drain, thread joins, the host's close) stalls until
/// released; tells when it began.
struct Undo(Arc<Stall>, mpsc::Sender<()>);

impl OpenedHost for Undo {
    fn host_volume(&self) -> Option<usize> {
        None
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        let _ = self.1.send(());
        self.0.wait();
    }
}

/// A mount whose publish fails and hands its published volume back to be undone; the undo
/// stalls. Meanwhile list and shutdown answer within [`ANSWER`] (the undo runs without the
/// control mutex) and the mount's letter stays claimed (its links are not gone yet); once the
/// undo returns, the mount fails with the publish's status and the letter is free. The
/// violations.
fn check_stalled_undo() -> Vec<String> {
    let mut v = Vec::new();
    let control = Arc::new(Control::default());
    let stall = Arc::new(Stall::default());
    let (undoing_tx, undoing_rx) = mpsc::channel();
    let failing = {
        let (c, s) = (Arc::clone(&control), Arc::clone(&stall));
        thread::spawn(move || {
            pending::mount(
                &*c,
                Some('S'),
                || Ok(()),
                move || Ok(Undo(s, undoing_tx)),
                |undo: Undo| -> Result<u32, (Status, Option<Undo>)> {
                    Err((Status::InsufficientResources, Some(undo)))
                },
            )
        })
    };
    if undoing_rx.recv_timeout(ANSWER).is_err() {
        v.push("R13: the failed publish's volume was never undone".into());
    }
    let blocked = |what: &str| format!("R13: {what} waited for a stalled undo");
    match within(&control, |c| c.list()) {
        Some(list) if list.is_empty() => {}
        Some(list) => v.push(format!("R13: list showed {list:?} during an undo")),
        None => {
            v.push(blocked("list"));
            stall.release();
        }
    }
    match within(&control, |c| {
        c.mount(2, 'S', || Ok(Host(Arc::new(Mutex::new(0)))))
    }) {
        Some(Err(LETTER_CLAIMED)) => {}
        Some(other) => v.push(format!(
            "R13: a mount of the letter being undone answered {other:?}"
        )),
        None => v.push(blocked("a mount of the same letter")),
    }
    if within(&control, |c| c.shut()).is_none() {
        v.push(blocked("shutdown"));
    }
    stall.release();
    let result = failing.join().unwrap();
    if result != Err(Status::InsufficientResources) {
        v.push(format!("R13: the failed publish ended with {result:?}"));
    }
    if control.pending(|p| p.letter_claimed('S')) {
        v.push("R13: the letter stayed claimed after the undo".into());
    }
    v
}

#[test]
fn r13_a_stalled_undo_of_a_failed_publish_blocks_no_other_control_ioctl() {
    let _g = switches();
    assert_eq!(check_stalled_undo(), Vec::<String>::new());
}

#[test]
fn r13_checks_catch_an_undo_under_the_control_mutex() {
    let _g = switches();
    set_faults(&[Fault::ControlPathHeldByHost]);
    let failures = check_stalled_undo();
    set_faults(&[]);
    assert!(
        failures
            .iter()
            .any(|f| f == "R13: list waited for a stalled undo"),
        "{failures:?}"
    );
}

// ------------------------------------------------------ shutdown (W1, R13)

/// The glue's table for shutdown: volumes, the order they were dismounted in, the one whose
/// dismount stalls until released, the volumes logged as left.
struct Table {
    volumes: Mutex<Vec<Vol>>,
    order: Mutex<Vec<u32>>,
    stalled: u32,
    stall: Stall,
    started: Mutex<Vec<thread::JoinHandle<()>>>,
    logged: Mutex<Vec<u32>>,
    kept: Mutex<Vec<thread::JoinHandle<()>>>,
}

impl Table {
    fn new(volumes: Vec<Vol>, stalled: u32) -> Arc<Table> {
        Arc::new(Table {
            volumes: Mutex::new(volumes),
            order: Mutex::new(Vec::new()),
            stalled,
            stall: Stall::default(),
            started: Mutex::new(Vec::new()),
            logged: Mutex::new(Vec::new()),
            kept: Mutex::new(Vec::new()),
        })
    }
    fn dismount(&self, id: u32) {
        if id == self.stalled {
            self.stall.wait();
        }
        self.order.lock().unwrap().push(id);
        self.volumes.lock().unwrap().retain(|v| v.id != id);
    }
}

/// The dismount-every-volume loop over the table (each volume on a thread of its own).
struct All(Arc<Table>);

impl DismountAll for All {
    type Volume = u32;
    fn next(&self) -> Picked<u32> {
        let mut volumes = self.0.volumes.lock().unwrap();
        match decide(&volumes) {
            Next::Dismount(i) => {
                volumes[i].busy = true;
                Picked::Dismount(volumes[i].id)
            }
            Next::Wait => Picked::Wait,
            Next::Done => Picked::Done,
        }
    }
    fn start(&self, id: u32) -> Result<(), u32> {
        let t = Arc::clone(&self.0);
        let h = thread::spawn(move || t.dismount(id));
        self.0.started.lock().unwrap().push(h);
        Ok(())
    }
    fn dismount_here(&self, id: u32) {
        self.0.dismount(id);
    }
    fn pause(&self) {
        thread::sleep(Duration::from_millis(1));
    }
    fn join_started(&self) {
        loop {
            let Some(h) = self.0.started.lock().unwrap().pop() else {
                break;
            };
            h.join().unwrap();
        }
    }
}

/// Shutdown's side: its worker runs `dismount_all` on a thread.
struct Shut(Arc<Table>);

impl ShutdownSide for Shut {
    type Worker = (thread::JoinHandle<()>, mpsc::Receiver<()>);
    fn start(&self) -> Result<Self::Worker, Status> {
        let (tx, rx) = mpsc::channel();
        let t = Arc::clone(&self.0);
        let h = thread::spawn(move || {
            dismount_all(&All(t));
            let _ = tx.send(());
        });
        Ok((h, rx))
    }
    fn wait(&self, worker: &Self::Worker, ms: Option<u32>) -> bool {
        match ms {
            Some(ms) => worker
                .1
                .recv_timeout(Duration::from_millis(ms.into()))
                .is_ok(),
            None => worker.1.recv().is_ok(),
        }
    }
    fn run_here(&self) {
        dismount_all(&All(Arc::clone(&self.0)));
    }
    fn keep(&self, worker: Self::Worker) {
        self.0.kept.lock().unwrap().push(worker.0);
    }
    fn each_left(&self, f: &mut dyn FnMut(u32)) {
        for v in self.0.volumes.lock().unwrap().iter() {
            f(v.id);
        }
    }
    fn log_left(&self, id: u32, _waited_ms: u32) {
        self.0.logged.lock().unwrap().push(id);
    }
}

/// Volumes 1 (plain), 2 (its host on 1), 3 (its host on 6; its file system's dismount never
/// finishes until released, as when a host stops answering), 6, 4 (plain). Shutdown waits
/// 1 s: it returns within [`ANSWER`], volume 3 and volume 6 (which holds 3's host) are left
/// and logged, every other volume was dismounted in host order. The violations.
fn check_bounded_shutdown() -> Vec<String> {
    let mut v = Vec::new();
    let volumes = vec![
        vol(1, None),
        vol(2, Some(1)),
        vol(3, Some(6)),
        vol(6, None),
        vol(4, None),
    ];
    let table = Table::new(volumes.clone(), 3);
    let (tx, rx) = mpsc::channel();
    let t = Arc::clone(&table);
    let started = Instant::now();
    let shut = thread::spawn(move || {
        let _ = tx.send(shutdown(&Shut(t), 1_000));
    });
    let outcome = rx.recv_timeout(ANSWER);
    match outcome {
        Ok(Outcome::Left(2)) => {}
        Ok(other) => v.push(format!(
            "W1: shutdown ended with {other:?}, not two volumes left"
        )),
        Err(_) => v.push(format!(
            "W1: shutdown still waiting for a volume's dismount after {} ms",
            started.elapsed().as_millis()
        )),
    }
    if v.is_empty() {
        let mut logged = table.logged.lock().unwrap().clone();
        logged.sort();
        if logged != [3, 6] {
            v.push(format!(
                "W1: shutdown logged {logged:?} as left, not [3, 6]"
            ));
        }
        let order = table.order.lock().unwrap().clone();
        let mut done = order.clone();
        done.sort();
        if done != [1, 2, 4] {
            v.push(format!("W1: shutdown dismounted {order:?}, not 1, 2 and 4"));
        }
        let rest: Vec<Vol> = volumes
            .iter()
            .filter(|x| order.contains(&x.id))
            .cloned()
            .collect();
        v.extend(check_order(&rest, &order));
        // Left as it is: the stalled volume and its host are still in the table.
        let left: Vec<u32> = table.volumes.lock().unwrap().iter().map(|x| x.id).collect();
        if left.len() != 2 {
            v.push(format!("W1: the table holds {left:?} after shutdown"));
        }
    }
    // The stalled host answers again: the kept thread finishes the rest, host order kept.
    table.stall.release();
    shut.join().unwrap();
    let kept: Vec<_> = table.kept.lock().unwrap().drain(..).collect();
    for h in kept {
        h.join().unwrap();
    }
    let order = table.order.lock().unwrap().clone();
    v.extend(check_order(&volumes, &order));
    v
}

#[test]
fn w1_shutdown_waits_a_bounded_time_for_its_own_dismount_thread() {
    let _g = switches();
    assert_eq!(check_bounded_shutdown(), Vec::<String>::new());
    // Nothing stalls: every volume dismounted in host order, shutdown finished.
    let volumes = vec![vol(1, None), vol(2, Some(1)), vol(3, None)];
    let table = Table::new(volumes.clone(), 0);
    assert_eq!(
        shutdown(&Shut(Arc::clone(&table)), 5_000),
        Outcome::Finished
    );
    let order = table.order.lock().unwrap().clone();
    assert_eq!(check_order(&volumes, &order), Vec::<String>::new());
    assert!(table.logged.lock().unwrap().is_empty());
}

#[test]
fn w1_checks_catch_a_shutdown_held_hostage_by_one_volume() {
    let _g = switches();
    set_faults(&[Fault::ControlPathHeldByHost]);
    let failures = check_bounded_shutdown();
    set_faults(&[]);
    assert!(
        failures
            .iter()
            .any(|f| f.starts_with("W1: shutdown still waiting for a volume's dismount after")),
        "{failures:?}"
    );
}

// ------------------------------- a mount refused by shutdown on a nested host (W1)

/// The glue's control mutex and table of volumes (with their closing counts), the mounts in
/// progress beside it, for a mount whose host is a file on one of the volumes.
struct Nested {
    mutex: Mutex<()>,
    table: Mutex<(Vec<Vol>, Pending)>,
    /// What happened, in order.
    log: Mutex<Vec<String>>,
}

impl ControlLocks for Nested {
    fn serialized<R>(&self, f: impl FnOnce() -> R) -> R {
        let _held = self.mutex.lock().unwrap();
        f()
    }
    fn pending<R>(&self, f: impl FnOnce(&mut Pending) -> R) -> R {
        f(&mut self.table.lock().unwrap().1)
    }
    fn hold_host(&self, host: usize) -> Option<u32> {
        let mut t = self.table.lock().unwrap();
        let e = t.0.iter_mut().find(|e| e.id as usize == host)?;
        e.closing += 1;
        Some(e.id)
    }
    fn release_host(&self, id: u32) {
        let mut t = self.table.lock().unwrap();
        if let Some(e) = t.0.iter_mut().find(|e| e.id == id) {
            e.closing -= 1;
        }
    }
}

/// A mount's opened host: a file on volume `on`; its undo (the drop) tells it began, stalls
/// until released, then closes the host.
struct NestedHost {
    on: u32,
    control: Arc<Nested>,
    undo: Arc<Stall>,
    undoing: mpsc::Sender<()>,
}

impl OpenedHost for NestedHost {
    fn host_volume(&self) -> Option<usize> {
        Some(self.on as usize)
    }
}

impl Drop for NestedHost {
    fn drop(&mut self) {
        let _ = self.undoing.send(());
        self.undo.wait();
        self.control
            .log
            .lock()
            .unwrap()
            .push("the refused mount closed its host".into());
    }
}

/// Shutdown's forced dismount of every volume over [`Nested`]'s table (on the loop's thread).
struct NestedAll(Arc<Nested>);

impl DismountAll for NestedAll {
    type Volume = u32;
    fn next(&self) -> Picked<u32> {
        let mut t = self.0.table.lock().unwrap();
        match decide(&t.0) {
            Next::Dismount(i) => {
                t.0[i].busy = true;
                Picked::Dismount(t.0[i].id)
            }
            Next::Wait => Picked::Wait,
            Next::Done => Picked::Done,
        }
    }
    fn start(&self, id: u32) -> Result<(), u32> {
        Err(id)
    }
    fn dismount_here(&self, id: u32) {
        self.0
            .log
            .lock()
            .unwrap()
            .push(format!("VcVolume{id} dismount started"));
        self.0.table.lock().unwrap().0.retain(|v| v.id != id);
    }
    fn pause(&self) {
        thread::sleep(Duration::from_millis(1));
    }
    fn join_started(&self) {}
}

/// Volume 1 in the table; a mount whose host is a file on it stalls in its open; shutdown
/// closes the table; the open returns and the mount is refused at its publish; its undo
/// stalls (its host file still open on volume 1) while shutdown's forced dismount of every
/// volume runs. Volume 1's dismount must not start before the refused mount closed its host;
/// then it must. The violations.
fn check_refused_mount_on_a_nested_host() -> Vec<String> {
    let mut v = Vec::new();
    let control = Arc::new(Nested {
        mutex: Mutex::new(()),
        table: Mutex::new((vec![vol(1, None)], Pending::new())),
        log: Mutex::new(Vec::new()),
    });
    let (open_stall, undo_stall) = (Arc::new(Stall::default()), Arc::new(Stall::default()));
    let (opening_tx, opening_rx) = mpsc::channel();
    let (undoing_tx, undoing_rx) = mpsc::channel();
    let mount = {
        let (c, s, u) = (
            Arc::clone(&control),
            Arc::clone(&open_stall),
            Arc::clone(&undo_stall),
        );
        thread::spawn(move || {
            let c2 = Arc::clone(&c);
            pending::mount(
                &*c,
                Some('M'),
                || Ok(()),
                move || {
                    let _ = opening_tx.send(());
                    s.wait();
                    Ok(NestedHost {
                        on: 1,
                        control: c2,
                        undo: u,
                        undoing: undoing_tx,
                    })
                },
                |host: NestedHost| -> Result<u32, (Status, Option<NestedHost>)> {
                    // Not reached here: the claim is refused before its publish, shutdown
                    // having closed the table during the open. Had the close come while its
                    // links were made, its push (under the table's lock) would refuse it.
                    let may = host.control.table.lock().unwrap().1.may_publish();
                    match may {
                        Err(status) => Err((status, Some(host))),
                        Ok(()) => Err((Status::InvalidParameter, None)),
                    }
                },
            )
        })
    };
    if opening_rx.recv_timeout(ANSWER).is_err() {
        v.push("W1: the mount never reached its open".into());
    }
    // Shutdown closes the table (the glue: under the table's lock).
    control.pending(|p| p.close(SHUTTING_DOWN));
    open_stall.release();
    if undoing_rx.recv_timeout(ANSWER).is_err() {
        v.push("W1: the refused mount was never undone".into());
    }
    // Shutdown's dismount of every volume, while the refused mount's undo stalls.
    let (done_tx, done_rx) = mpsc::channel();
    let all = {
        let c = Arc::clone(&control);
        thread::spawn(move || {
            dismount_all(&NestedAll(c));
            let _ = done_tx.send(());
        })
    };
    thread::sleep(Duration::from_millis(200));
    undo_stall.release();
    let result = mount.join().unwrap();
    if done_rx.recv_timeout(ANSWER).is_err() {
        v.push("W1: shutdown's dismount of every volume never finished".into());
    }
    all.join().unwrap();
    if result != Err(SHUTTING_DOWN) {
        v.push(format!(
            "W1: the mount ended with {result:?} after shutdown"
        ));
    }
    let log = control.log.lock().unwrap().clone();
    let closed = log
        .iter()
        .position(|e| e == "the refused mount closed its host");
    let started = log.iter().position(|e| e == "VcVolume1 dismount started");
    match (closed, started) {
        (Some(c), Some(s)) if c < s => {}
        (_, Some(_)) => v.push(
            "W1: VcVolume1 started while a mount refused by shutdown still held its host file \
             on it"
                .into(),
        ),
        (_, None) => v.push(format!("W1: VcVolume1 was never dismounted: {log:?}")),
    }
    if !control.table.lock().unwrap().0.is_empty() {
        v.push("W1: a volume was left in the table".into());
    }
    v
}

#[test]
fn w1_shutdown_dismounts_a_host_after_the_refused_mount_on_it_closed_its_file() {
    let _g = switches();
    assert_eq!(check_refused_mount_on_a_nested_host(), Vec::<String>::new());
}

#[test]
fn w1_checks_catch_a_host_dismounted_under_a_refused_mount() {
    let _g = switches();
    set_faults(&[Fault::W1RefusedMountHostUncounted]);
    let failures = check_refused_mount_on_a_nested_host();
    set_faults(&[]);
    assert!(
        failures.iter().any(|f| f
            == "W1: VcVolume1 started while a mount refused by shutdown still held its host \
                file on it"),
        "{failures:?}"
    );
}

// ------------------------------------------------- the last reference (W1)

/// The volume device: its drop is its deletion (IoDeleteDevice), recorded with the thread it
/// ran in.
struct Device {
    steps: Arc<Mutex<Vec<String>>>,
}

impl Drop for Device {
    fn drop(&mut self) {
        let at = thread::current()
            .name()
            .unwrap_or("another thread")
            .to_string();
        self.steps
            .lock()
            .unwrap()
            .push(format!("device deleted in {at}"));
    }
}

/// The glue's table teardown (`TableTeardown`): the sequence's reference to the device,
/// dropped through `delete_when_sole` as the glue's `delete_device` does.
struct TableModel {
    ours: std::cell::RefCell<Option<Arc<Device>>>,
    pauses: std::cell::Cell<u32>,
}

impl Teardown for TableModel {
    fn keep_driver_loaded(&self) {}
    fn drain(&self) {}
    fn remove_links(&self) {}
    fn delete_device(&self) {
        if let Some(ours) = self.ours.borrow_mut().take() {
            let pauses = delete_when_sole(ours, || thread::sleep(Duration::from_millis(1)));
            self.pauses.set(pauses);
        }
    }
}

/// The file system on the volume: lets go at once; its handle's close is recorded.
struct AboveModel(Arc<Mutex<Vec<String>>>);

impl VolumeAbove for AboveModel {
    fn others_hold_device(&mut self) -> bool {
        false
    }
    fn lock(&mut self) -> Result<(), Status> {
        Ok(())
    }
    fn dismount(&mut self) -> Result<(), Status> {
        Ok(())
    }
    fn has_handle(&self) -> bool {
        true
    }
    fn file_system_mounted(&mut self) -> bool {
        true
    }
    fn wait_before_retry(&mut self) {}
    fn release(&mut self) {
        self.0.lock().unwrap().push("handle closed".into());
    }
}

/// The engine's dismount sequence on a thread of its own (the dismount IOCTL's), while a
/// status call (another thread) holds a reference to the device for 100 ms. The device must
/// be deleted by the sequence, before the handle's close and the IOCTL's completion, not
/// afterwards in the status call's thread. The violations.
fn check_last_reference() -> Vec<String> {
    let mut v = Vec::new();
    let steps = Arc::new(Mutex::new(Vec::new()));
    let ours = Arc::new(Device {
        steps: Arc::clone(&steps),
    });
    let status_holds = Arc::clone(&ours);
    let (held_tx, held_rx) = mpsc::channel();
    let status = thread::Builder::new()
        .name("the status call".into())
        .spawn(move || {
            let _ = held_tx.send(());
            thread::sleep(Duration::from_millis(100));
            drop(status_holds);
        })
        .unwrap();
    held_rx.recv().unwrap();
    let s = Arc::clone(&steps);
    let sequence = thread::Builder::new()
        .name("the dismount sequence".into())
        .spawn(move || {
            let teardown = TableModel {
                ours: std::cell::RefCell::new(Some(ours)),
                pauses: std::cell::Cell::new(0),
            };
            let mut above = AboveModel(Arc::clone(&s));
            let report = dismount::run(&mut above, &teardown, false);
            s.lock().unwrap().push("dismount completed".into());
            (report.is_ok(), teardown.pauses.get())
        })
        .unwrap();
    let (ok, pauses) = sequence.join().unwrap();
    status.join().unwrap();
    if !ok {
        v.push("W1: the dismount was refused".into());
    }
    let steps = steps.lock().unwrap().clone();
    let want = [
        "device deleted in the dismount sequence",
        "handle closed",
        "dismount completed",
    ];
    if steps != want {
        v.push(format!(
            "W1: the device was not deleted by the dismount sequence before its handle's \
             close and its completion: {steps:?}"
        ));
    }
    if pauses == 0 {
        v.push("W1: the sequence never waited for the status call's reference".into());
    }
    v
}

#[test]
fn w1_the_dismount_sequence_deletes_the_device_whoever_held_a_reference() {
    let _g = switches();
    assert_eq!(check_last_reference(), Vec::<String>::new());
}

#[test]
fn w1_checks_catch_a_device_deleted_by_another_reference() {
    let _g = switches();
    set_faults(&[Fault::W1DeleteBeforeLastReference]);
    let failures = check_last_reference();
    set_faults(&[]);
    let want = "W1: the device was not deleted by the dismount sequence before its handle's \
                close and its completion: [\"handle closed\", \"dismount completed\", \
                \"device deleted in the status call\"]";
    assert!(failures.iter().any(|f| f == want), "{failures:?}");
}
