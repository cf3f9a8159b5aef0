//! Cancelling queued requests (issue "WDM driver": pending requests cancellable while queued;
//! issue "Direct path": a waiting request can be cancelled, STATUS_CANCELLED, nothing issued).
//!
//! The issuer cancels like IoCancelIrp: `CancelHandle::cancel` sets the cancel flag and, when
//! the engine had armed the request's hook, runs the cancel routine (`Volume::cancel`). The
//! host is held so that every worker (or the legacy queue's 8 items) stays busy: the cancelled
//! request is provably still queued, and its completion arrives while the host is still held.

mod common;

use std::sync::mpsc;

use common::*;
use vcdirect::registry::Gates;
use vcdirect::Status;
use vcdirect_usermode::request::{Completion, TestRequest};

const SIZE: u64 = 16 * MIB;
const LEN: u32 = 64 * 1024;

/// Offsets 1 MiB apart: no two requests overlap and the legacy read-ahead never covers one.
fn slot(i: u64) -> u64 {
    i * MIB
}

fn cancel(vol: &Vol, req: &TestRequest) -> impl FnOnce() -> bool {
    let handle = req.cancel_handle();
    let vol = std::sync::Arc::clone(vol);
    move || handle.cancel(|key| vol.cancel(key))
}

/// Occupies every place where the engine works on a request: 8 reads that block in the host.
fn fill_busy(vol: &Vol, host: &ProbeHost) -> Vec<mpsc::Receiver<Completion>> {
    host.hold();
    let busy: Vec<_> = (0..8).map(|i| submit_read(vol, slot(i), LEN)).collect();
    // Direct: 8 workers each in a host read. Legacy: the I/O thread in the first read and the
    // main thread holding all 8 items.
    let gates = vol.effective();
    let want = if gates.direct_read { 8 } else { 1 };
    wait_for("the host holds the first reads", || {
        host.in_flight() == want
    });
    busy
}

fn queued_cancel(gates: Gates) {
    let p = params(SIZE, gates);
    let host = host_for(&p);
    let truth = pattern(7, SIZE as usize);
    put_plain(&host.mem, DATA_OFFSET, 0, &truth);
    let vol = mount(host.clone(), p);
    let busy = fill_busy(&vol, &host);
    let ops_before = host.ops().len();
    let medium_before = host.mem.snapshot();

    // A read and a write that wait for a worker (or an item): cancel both.
    let (tx, read_rx) = mpsc::channel();
    let queued_read = TestRequest::read(slot(9), LEN, move |c| {
        let _ = tx.send(c);
    });
    let cancel_read = cancel(&vol, &queued_read);
    vol.dispatch(queued_read);
    let written = pattern(99, LEN as usize);
    let (tx, write_rx) = mpsc::channel();
    let queued_write = TestRequest::write(slot(10), &written, move |c| {
        let _ = tx.send(c);
    });
    let cancel_write = cancel(&vol, &queued_write);
    vol.dispatch(queued_write);
    assert!(
        cancel_read(),
        "the read was queued: its cancel routine ran ({gates})"
    );
    assert!(
        cancel_write(),
        "the write was queued: its cancel routine ran ({gates})"
    );

    // Both complete now, with the host still held: nothing waits for a worker.
    for (what, rx, data) in [
        ("read", &read_rx, None),
        ("write", &write_rx, Some(&written)),
    ] {
        let c = wait(rx);
        assert_eq!(
            (c.status, c.information),
            (Status::Cancelled, 0),
            "{what} ({gates})"
        );
        let buf = c.buf.expect("the buffer comes back");
        match data {
            Some(d) => assert!(buf.as_slice() == &d[..], "write buffer untouched"),
            None => assert!(unread(buf.as_slice()), "read buffer untouched"),
        }
        assert!(rx.try_recv().is_err(), "{what} completed twice");
    }
    assert!(
        busy.iter().all(|rx| rx.try_recv().is_err()),
        "the busy reads are still held"
    );
    assert_eq!(host.ops().len(), ops_before, "nothing issued for them");

    host.release();
    for (i, rx) in busy.iter().enumerate() {
        let c = wait(rx);
        assert_eq!(c.status, Status::Success);
        let at = slot(i as u64) as usize;
        assert!(c.buf.unwrap().as_slice() == &truth[at..at + LEN as usize]);
    }
    wait_until_idle(&vol);
    assert_eq!(vol.open_cancel_handshakes(), 0);
    assert!(
        host.mem.snapshot() == medium_before,
        "the cancelled write never reached the medium"
    );
    assert!(host
        .ops()
        .iter()
        .all(|o| o.offset != DATA_OFFSET + slot(9) && o.offset != DATA_OFFSET + slot(10)));
    assert_eq!(vol.counters.snapshot().failed, 2);
    // The volume keeps serving, on the same slots.
    assert_eq!(
        write(&vol, slot(10), &written),
        (Status::Success, LEN as usize)
    );
    let (s, n, back) = read(&vol, slot(10), LEN);
    assert_eq!((s, n), (Status::Success, LEN as usize));
    assert!(back == written);
    vol.dismount();
}

#[test]
fn queued_direct_requests_cancel_at_once_and_issue_nothing() {
    queued_cancel(BOTH_ON);
}

#[test]
fn queued_legacy_requests_cancel_at_once_and_issue_nothing() {
    queued_cancel(BOTH_OFF);
}

/// A request waiting for an earlier overlapping write is cancelled: its hook is not armed yet
/// (it is armed as the job enters a path's FIFO, so no cancel routine ever looks for a job in
/// the range ordering: docs/review.md W6), only its cancel flag is set; it completes with
/// STATUS_CANCELLED as soon as its range is granted, and nothing is issued for it.
#[test]
fn request_waiting_for_an_overlap_completes_cancelled_when_granted() {
    for gates in [BOTH_ON, BOTH_OFF] {
        let p = params(SIZE, gates);
        let host = host_for(&p);
        let vol = mount(host.clone(), p);
        host.hold();
        let data = pattern(3, LEN as usize);
        let first = submit_write(&vol, 0, &data);
        wait_for("the write is in the host", || host.in_flight() == 1);
        let (tx, rx) = mpsc::channel();
        let waiting = TestRequest::read(4096, 4096, move |c| {
            let _ = tx.send(c);
        });
        let cancel_it = cancel(&vol, &waiting);
        vol.dispatch(waiting);
        assert!(
            !cancel_it(),
            "not armed while it waits in the range ordering: only its cancel flag is set"
        );
        let ops_before = host.ops().len();
        host.release();
        assert_eq!(wait(&first).status, Status::Success);
        let c = wait(&rx);
        assert_eq!((c.status, c.information), (Status::Cancelled, 0), "{gates}");
        wait_until_idle(&vol);
        assert_eq!(vol.open_cancel_handshakes(), 0);
        assert_eq!(
            host.ops().len(),
            ops_before,
            "nothing issued for it ({gates})"
        );
        vol.dismount();
    }
}

/// Cancelled before the engine armed the hook (IoCancelIrp found no routine): the engine sees
/// the cancel flag when it arms and completes at once on the dispatching thread.
#[test]
fn request_cancelled_before_dispatch_completes_at_once() {
    let p = params(SIZE, BOTH_ON);
    let host = host_for(&p);
    let vol = mount(host.clone(), p);
    let (tx, rx) = mpsc::channel();
    let me = thread_name();
    let req = TestRequest::read(0, LEN, move |c| {
        let _ = tx.send((c.status, c.information, thread_name()));
    });
    let handle = req.cancel_handle();
    assert!(!handle.cancel(|_| panic!("no routine was armed")));
    vol.dispatch(req);
    assert_eq!(wait_pair(&rx), (Status::Cancelled, 0, me));
    assert!(host.ops().is_empty());
    wait_until_idle(&vol);
    assert_eq!(vol.open_cancel_handshakes(), 0);
    vol.dismount();
}

/// Once a path has taken a request, the issuer's cancel no longer reaches the engine: the
/// routine is not run and the request finishes (here: successfully, having started).
#[test]
fn cancel_after_a_worker_took_the_request_does_not_run_the_routine() {
    for gates in [BOTH_ON, BOTH_OFF] {
        let p = params(SIZE, gates);
        let host = host_for(&p);
        let vol = mount(host.clone(), p);
        host.hold();
        let (tx, rx) = mpsc::channel();
        let req = TestRequest::read(0, 4096, move |c| {
            let _ = tx.send(c);
        });
        let cancel_it = cancel(&vol, &req);
        vol.dispatch(req);
        wait_for("the read is in the host", || host.in_flight() == 1);
        assert!(!cancel_it(), "taken: the routine must not run ({gates})");
        host.release();
        let c = wait(&rx);
        assert_eq!(
            (c.status, c.information),
            (Status::Success, 4096),
            "{gates}"
        );
        wait_until_idle(&vol);
        assert_eq!(vol.open_cancel_handshakes(), 0);
        vol.dismount();
    }
}

/// Random cancels racing with the workers, on both paths: every request completes exactly
/// once, with success or STATUS_CANCELLED and nothing transferred. Each write stores bytes the
/// medium does not hold yet, so a cancelled write that still reached the medium shows; a
/// cancelled read's buffer must still be unread. Requests on one slot overlap entirely and
/// are served in dispatch order, so a per-slot model says what each read and the medium hold.
#[test]
fn cancels_racing_with_workers_complete_each_request_once() {
    for gates in [BOTH_ON, BOTH_OFF] {
        let p = params(SIZE, gates);
        let host = host_for(&p);
        let truth = pattern(11, SIZE as usize);
        put_plain(&host.mem, DATA_OFFSET, 0, &truth);
        let vol = mount(host.clone(), p);
        let mut pending = Vec::new();
        for i in 0..400u64 {
            let (tx, rx) = mpsc::channel();
            let off = (i * 7919 % 240) * LEN as u64;
            let data = (i % 3 == 0).then(|| pattern(1_000 + i, LEN as usize));
            let req = match &data {
                Some(d) => TestRequest::write(off, d, move |c| {
                    let _ = tx.send(c);
                }),
                None => TestRequest::read(off, LEN, move |c| {
                    let _ = tx.send(c);
                }),
            };
            let cancel_it = cancel(&vol, &req);
            vol.dispatch(req);
            if i % 2 == 0 {
                if i % 4 == 0 {
                    std::thread::yield_now();
                }
                cancel_it();
            }
            pending.push((data, off, rx));
        }
        // Per slot: the bytes the last successful write (in dispatch order) left there.
        let mut model = truth.clone();
        let (mut cancelled_reads, mut cancelled_writes) = (0, 0);
        for (i, (data, off, rx)) in pending.into_iter().enumerate() {
            let c = wait(&rx);
            let at = off as usize..off as usize + LEN as usize;
            let buf = c.buf.expect("the buffer comes back");
            match (c.status, &data) {
                (Status::Success, Some(d)) => {
                    assert_eq!(c.information, LEN as usize);
                    model[at].copy_from_slice(d);
                }
                (Status::Success, None) => {
                    assert_eq!(c.information, LEN as usize);
                    assert!(
                        buf.as_slice() == &model[at],
                        "read {i} at {off}: not the last write before it ({gates})"
                    );
                }
                (Status::Cancelled, Some(d)) => {
                    assert_eq!(c.information, 0);
                    assert!(buf.as_slice() == &d[..], "write buffer untouched");
                    cancelled_writes += 1;
                }
                (Status::Cancelled, None) => {
                    assert_eq!(c.information, 0);
                    assert!(
                        unread(buf.as_slice()),
                        "cancelled read {i} got data ({gates})"
                    );
                    cancelled_reads += 1;
                }
                (other, _) => panic!("unexpected {other:?} ({gates})"),
            }
            assert!(rx.try_recv().is_err(), "completed twice");
        }
        assert!(
            cancelled_reads > 0 && cancelled_writes > 0,
            "cancels took effect on {cancelled_reads} reads and {cancelled_writes} writes ({gates})"
        );
        wait_until_idle(&vol);
        assert_eq!(vol.open_cancel_handshakes(), 0);
        assert!(
            get_plain(&host.mem, DATA_OFFSET, 0, SIZE as usize) == model,
            "the medium is not what the successful writes left: a cancelled write reached it ({gates})"
        );
        vol.dismount();
    }
}

fn wait_pair<T>(rx: &mpsc::Receiver<T>) -> T {
    rx.recv_timeout(WAIT).expect("completed")
}
