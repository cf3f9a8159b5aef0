//! Review points about completion and request ownership through the std host: R1 (re-entrant
//! completions cannot deadlock and never run on engine threads), R9 (completion consumes the
//! request; what is reported was captured before), R14 (requests without a usable buffer).

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use common::*;
use vcdirect::platform::{RequestKind, UpperRequest};
use vcdirect::registry::Gates;
use vcdirect::Status;
use vcdirect_usermode::request::{Buf, Completion, TestRequest};

#[derive(Default)]
struct Log {
    completed: AtomicU64,
    threads: Mutex<Vec<String>>,
    problems: Mutex<Vec<String>>,
}

impl Log {
    fn problem(&self, p: String) {
        self.problems.lock().unwrap().push(p);
    }
}

const DEPTH: u32 = 8;
const CHAINS: u64 = 64;

/// The request of `chain` at `depth`. Its completion checks itself, then (below the depth
/// limit) submits the next read on the same volume and blocks until that one completed, as
/// an upper filter's completion routine may do.
fn chain_request(
    vol: &Vol,
    truth: &Arc<Vec<u8>>,
    log: &Arc<Log>,
    chain: u64,
    depth: u32,
    done: mpsc::Sender<()>,
) -> TestRequest {
    // Top level: direct reads, direct writes and legacy (over 1 MiB) reads; nested: small
    // direct reads, or legacy reads in every 16th chain.
    let (write, len) = match (depth, chain % 4) {
        (0, 0) => (false, 64 * 1024),
        (0, 1) => (true, 64 * 1024),
        (0, 2) => (false, (1 << 20) + 64 * 1024),
        (0, _) => (false, 4096),
        _ if chain % 16 == 2 && depth % 2 == 1 => (false, (1 << 20) + 4096),
        _ => (false, 4096),
    };
    let off =
        ((chain * 131_072 + u64::from(depth) * 8192) % (truth.len() as u64 - (2 << 20))) & !511;
    let (vol2, truth2, log2) = (Arc::clone(vol), Arc::clone(truth), Arc::clone(log));
    let callback = move |c: Completion| {
        log2.completed.fetch_add(1, Ordering::SeqCst);
        log2.threads.lock().unwrap().push(thread_name());
        let want = &truth2[off as usize..off as usize + len];
        if c.status != Status::Success || c.information != len {
            log2.problem(format!(
                "chain {chain} depth {depth}: {:?} {}",
                c.status, c.information
            ));
        } else if !write && c.buf.as_ref().map(|b| b.as_slice()) != Some(want) {
            log2.problem(format!("chain {chain} depth {depth}: wrong data"));
        }
        if depth < DEPTH {
            let (tx, rx) = mpsc::channel();
            let next = chain_request(&vol2, &truth2, &log2, chain, depth + 1, tx);
            vol2.dispatch(next);
            // Block this completion until the nested request completed.
            if rx.recv_timeout(WAIT).is_err() {
                log2.problem(format!(
                    "chain {chain} depth {depth}: nested read never completed"
                ));
            }
        }
        let _ = done.send(());
    };
    if write {
        TestRequest::write(off, &truth[off as usize..off as usize + len], callback)
    } else {
        TestRequest::read(off, len as u32, callback)
    }
}

#[test]
fn r1_reentrant_completions_that_wait_cannot_deadlock_and_never_run_on_engine_threads() {
    with_watchdog(WAIT, "r1 re-entrant completions", || {
        let size = 16 * MIB;
        let p = params(size, BOTH_ON);
        let host = host_for(&p);
        let truth = Arc::new(pattern(21, size as usize));
        put_plain(&host.mem, DATA_OFFSET, 0, &truth);
        let vol = mount(host, p);
        let log = Arc::new(Log::default());
        let (tx, rx) = mpsc::channel();
        // All 64 chains at once: far more than the 8 workers and 8 legacy items.
        for chain in 0..CHAINS {
            vol.dispatch(chain_request(&vol, &truth, &log, chain, 0, tx.clone()));
        }
        for _ in 0..CHAINS {
            rx.recv_timeout(WAIT)
                .expect("a chain never finished: deadlock");
        }
        let problems = log.problems.lock().unwrap().clone();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            log.completed.load(Ordering::SeqCst),
            CHAINS * u64::from(DEPTH + 1)
        );
        let threads = log.threads.lock().unwrap().clone();
        let engine: Vec<&String> = threads.iter().filter(|n| n.starts_with("vc-")).collect();
        assert!(
            engine.is_empty(),
            "completions ran on engine threads: {engine:?}"
        );
        assert!(
            threads.iter().all(|n| n == "system-worker"),
            "completions ran on {:?}",
            threads
                .iter()
                .filter(|n| *n != "system-worker")
                .collect::<Vec<_>>()
        );
        let c = vol.counters.snapshot();
        assert!(
            c.direct_reads > 0 && c.direct_writes > 0 && c.legacy_reads > 0,
            "{c:?}"
        );
        // The nested reads were dispatched at PASSIVE_LEVEL from the upper completions: small
        // ones were issued by those threads themselves and finished where the host completed
        // them, while the completions above them blocked.
        assert!(c.dispatch_issued > 0, "{c:?}");
        vol.dismount();
    });
}

/// R1 with one hand-off less: a request finished while a work item is free and no
/// earlier request waits for one has its work item queued by the thread that finished it (a
/// direct worker, the legacy completion thread); once every work item is busy, later requests
/// go to the completion thread, which waits for one, so the bound still holds. Either way the
/// upper completion runs on a system worker, never on an engine thread.
#[test]
fn r1_finishers_queue_free_work_items_themselves_and_the_bound_still_holds() {
    with_watchdog(WAIT, "r1 finisher hand-off", || {
        let mut p = params(4 * MIB, BOTH_ON);
        p.tunables.max_work_items = 2;
        let vol = mount(host_for(&p), p);
        // Lone requests one after the other, direct (4 KiB) and legacy (over 1 MiB): at most
        // one routine is active when the next request finishes, so a work item is free.
        let lone = [4096u32, (1 << 20) + 4096, 4096, (1 << 20) + 4096];
        for (i, len) in lone.iter().enumerate() {
            let c = wait(&submit_read(&vol, i as u64 * 8192, *len));
            assert_eq!(c.status, Status::Success);
        }
        assert_eq!(vol.completions_queued_by_finisher(), lone.len() as u64);
        wait_for("every work item free", || vol.completions_idle());
        let c = vol.counters.snapshot();
        assert!(c.direct_reads == 2 && c.legacy_reads == 2, "{c:?}");

        // Six requests whose upper completions block until the gate opens: the first two
        // finishers take the two work items, the other four wait at the completion thread.
        type Gate = (Mutex<(bool, usize, usize)>, std::sync::Condvar);
        let gate: Arc<Gate> = Arc::new((Mutex::new((false, 0, 0)), std::sync::Condvar::new()));
        let threads = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        for i in 0..6u64 {
            let (gate, threads, tx) = (Arc::clone(&gate), Arc::clone(&threads), tx.clone());
            vol.dispatch(TestRequest::read(i * 8192, 4096, move |c: Completion| {
                threads.lock().unwrap().push(thread_name());
                let (state, cv) = &*gate;
                let mut g = state.lock().unwrap();
                g.1 += 1;
                g.2 = g.2.max(g.1);
                cv.notify_all();
                while !g.0 {
                    g = cv.wait(g).unwrap();
                }
                g.1 -= 1;
                drop(g);
                let _ = tx.send(c.status);
            }));
        }
        wait_for("two upper completions blocked", || {
            gate.0.lock().unwrap().1 == 2
        });
        wait_for("all six finished by their workers", || {
            vol.counters.snapshot().direct_reads == 2 + 6
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(gate.0.lock().unwrap().1, 2, "the bound of 2 was exceeded");
        assert_eq!(
            vol.completions_queued_by_finisher(),
            lone.len() as u64 + 2,
            "only the two finishers that found a free work item queue one themselves"
        );
        {
            let (state, cv) = &*gate;
            state.lock().unwrap().0 = true;
            cv.notify_all();
        }
        for _ in 0..6 {
            let status = rx
                .recv_timeout(WAIT)
                .expect("a blocked completion never ran");
            assert_eq!(status, Status::Success);
        }
        assert_eq!(gate.0.lock().unwrap().2, 2, "most routines active at once");
        let threads = threads.lock().unwrap().clone();
        assert!(
            threads.iter().all(|n| n == "system-worker"),
            "completions ran on {threads:?}"
        );
        // Once nothing waits and the routines have returned, a lone request's finisher queues
        // its own work item again.
        wait_for("every work item free again", || vol.completions_idle());
        assert_eq!(wait(&submit_read(&vol, 0, 4096)).status, Status::Success);
        assert_eq!(vol.completions_queued_by_finisher(), lone.len() as u64 + 3);
        vol.dismount();
        assert_eq!(vol.completions(), lone.len() as u64 + 7);
    });
}

/// R9, at compile time: completion takes the request by value, so nothing can read it
/// afterwards (this line does not compile if `complete` borrowed it).
const _COMPLETE_CONSUMES: fn(TestRequest, Status, usize) = <TestRequest as UpperRequest>::complete;

#[test]
fn r9_completion_consumes_the_request_and_reports_what_was_captured_before() {
    for gates in [BOTH_OFF, BOTH_ON] {
        let p = params(4 * MIB, gates);
        let vol = mount(host_for(&p), p);
        // (kind, offset, length, expected status)
        let cases: [(RequestKind, i64, u32, Status); 5] = [
            (RequestKind::Write, 4096, 65536, Status::Success),
            (RequestKind::Read, 4096, 65536, Status::Success),
            (RequestKind::Write, 0, (1 << 20) + 512, Status::Success),
            (RequestKind::Read, 0, (1 << 20) + 512, Status::Success),
            (
                RequestKind::Write,
                (4 * MIB) as i64,
                512,
                Status::InvalidParameter,
            ),
        ];
        for (kind, offset, length, want) in cases {
            // A write carries its data; a read gets a buffer of bytes the medium never holds,
            // so only a real read-back can pass.
            let data = pattern(u64::from(length), length as usize);
            let buf = match kind {
                RequestKind::Write => Buf::from_slice(&data),
                _ => Buf::unread_aligned(length as usize, 4096),
            };
            let sent = buf.as_slice().to_vec();
            let (tx, rx) = mpsc::channel();
            let req = TestRequest::new(kind, offset, length, Some(buf), move |c| {
                let _ = tx.send(c);
            });
            // Captured before dispatch: the request itself is gone once dispatched.
            let (k, o, l) = (req.kind(), req.offset(), req.length());
            vol.dispatch(req);
            let c = wait(&rx);
            assert_eq!(c.status, want, "{k:?} {o} {l} {gates}");
            let info = if want.is_success() { l as usize } else { 0 };
            assert_eq!(c.information, info, "{k:?} {gates}");
            let buf = c.buf.expect("the buffer comes back with the completion");
            assert_eq!(buf.as_slice().len(), l as usize);
            if k == RequestKind::Write || !want.is_success() {
                // A write's buffer is never encrypted in place; a refused one is untouched.
                assert!(
                    buf.as_slice() == &sent[..],
                    "{k:?} buffer changed ({gates})"
                );
            } else {
                let w = pattern(u64::from(l), l as usize);
                assert!(buf.as_slice() == &w[..], "{k:?} read back ({gates})");
            }
            assert!(rx.try_recv().is_err(), "completed twice");
        }
        vol.dismount();
    }
}

#[test]
fn r14_requests_without_a_usable_buffer_fail_cleanly_and_the_volume_keeps_serving() {
    for gates in [
        BOTH_OFF,
        BOTH_ON,
        Gates {
            read: true,
            write: false,
        },
    ] {
        let p = params(2 * MIB, gates);
        let host = host_for(&p);
        let vol = mount(host.clone(), p);
        let me = thread_name();
        for kind in [RequestKind::Read, RequestKind::Write] {
            // No buffer at all (an IRP without an MDL).
            let (tx, rx) = mpsc::channel();
            vol.dispatch(TestRequest::new(kind, 4096, 8192, None, move |c| {
                let _ = tx.send((c, thread_name()));
            }));
            let (c, on) = rx.recv_timeout(WAIT).expect("completed");
            assert_eq!(
                (c.status, c.information),
                (Status::InvalidUserBuffer, 0),
                "{kind:?} {gates}"
            );
            assert_eq!(
                on, me,
                "an inline rejection completes on the dispatching thread"
            );
            // A buffer shorter than the request's length is not usable either; it comes back.
            let short = Buf::from_slice(&pattern(1, 4096));
            let c = raw_request(&vol, kind, 4096, 8192, Some(short));
            assert_eq!(
                (c.status, c.information),
                (Status::InvalidUserBuffer, 0),
                "{kind:?} {gates}"
            );
            assert_eq!(
                c.buf.expect("buffer back").as_slice(),
                &pattern(1, 4096)[..]
            );
        }
        assert_eq!(
            host.ops().len(),
            0,
            "no host operation for a bufferless request"
        );
        assert_eq!(vol.counters.snapshot().rejected, 4);
        // The volume keeps serving on every path.
        for len in [65536u32, (1 << 20) + 512] {
            let data = pattern(u64::from(len), len as usize);
            assert_eq!(write(&vol, 0, &data), (Status::Success, len as usize));
            let (s, n, back) = read(&vol, 0, len);
            assert_eq!((s, n), (Status::Success, len as usize));
            assert!(back == data);
        }
        wait_until_idle(&vol);
        vol.dismount();
    }
}
