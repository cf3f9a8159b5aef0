//! Key erasure and dismount through the std host: R2 (no segment or fragment after the key
//! block), R3 (erase racing in-flight crypto), and dismount under load on both paths (R13).

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vcdirect::platform::HostLimits;
use vcdirect::registry::Gates;
use vcdirect::Status;
use vcdirect_usermode::host::MemoryHost;
use vcdirect_usermode::request::{Completion, TestRequest};

/// Mounts a 4 MiB volume whose host takes at most 64 KiB per transfer; the first host
/// operation of direction `write` erases the keys from another thread and returns only once
/// the block flag is set.
///
/// What may happen meanwhile, and so what the hook waits for: a direct worker issues its
/// segments one after the other, so while the hook holds the first nothing else moves, and the
/// worker's check before the second segment must stop it. On the legacy path the main thread
/// prepares the next fragment while the I/O thread is in the host: for a write it encrypts it
/// (a second key use), and the hook waits for that, so the fragment was encrypted before the
/// block and only the I/O thread's own check can still stop it (the harder case). A read's
/// fragment is queued without the key (nothing to wait for): the main thread's check or the I/O
/// thread's stops it, whichever sees the block first.
fn r2_volume(gates: Gates, write: bool) -> (ProbeHost, Vol, Arc<Mutex<Option<JoinHandle<()>>>>) {
    let size = 4 * MIB;
    let p = with_fragment(params(size, gates), 64 * 1024);
    let mem = MemoryHost::new(DATA_OFFSET + size).with_limits(HostLimits {
        max_transfer: 64 * 1024,
        ..HostLimits::unlimited()
    });
    let host = ProbeHost::new(mem);
    put_plain(&host.mem, DATA_OFFSET, 0, &pattern(1, size as usize));
    let vol = mount(host.clone(), p);
    let eraser = Arc::new(Mutex::new(None));
    let weak = Arc::downgrade(&vol);
    let slot = Arc::clone(&eraser);
    host.set_hook(write, move || {
        let v = weak.upgrade().expect("volume alive");
        if write && gates == BOTH_OFF {
            wait_for(
                "the main thread started encrypting the second fragment",
                || v.key().uses() >= 2,
            );
        }
        let e = Arc::clone(&v);
        *slot.lock().unwrap() = Some(std::thread::spawn(move || e.erase_keys()));
        while !v.key().is_blocked() {
            std::thread::yield_now();
        }
    });
    (host, vol, eraser)
}

fn r2_case(what: &str, gates: Gates, write: bool) {
    let (host, vol, eraser) = r2_volume(gates, write);
    let before = host.mem.snapshot();
    let rx = if write {
        submit_write(&vol, 0, &pattern(2, 128 * 1024))
    } else {
        submit_read(&vol, 0, 128 * 1024)
    };
    let c = wait(&rx);
    assert_eq!((c.status, c.information), (Status::DeviceBusy, 0), "{what}");
    let ops: Vec<Op> = host
        .ops()
        .into_iter()
        .filter(|o| o.write == write)
        .collect();
    assert_eq!(
        ops.len(),
        1,
        "{what}: the second 64 KiB piece was issued: {ops:?}"
    );
    assert_eq!((ops[0].offset, ops[0].len), (DATA_OFFSET, 65536), "{what}");
    if write {
        let after = host.mem.snapshot();
        let second = (DATA_OFFSET + 65536) as usize..(DATA_OFFSET + 131072) as usize;
        assert!(
            after[second.clone()] == before[second],
            "{what}: second half written"
        );
    } else {
        // Nothing read with the erased key reached the caller.
        let back = c.buf.unwrap();
        assert!(
            back.as_slice()[..65536] != pattern(1, 65536)[..],
            "{what}: plaintext leaked"
        );
    }
    eraser
        .lock()
        .unwrap()
        .take()
        .expect("erase ran")
        .join()
        .unwrap();
    assert!(vol.key().is_erased());
    assert_eq!(vol.key().late_users(), 0);
    // Later requests fail the same way.
    let (s, _, _) = read(&vol, 0, 4096);
    assert_eq!(s, Status::DeviceBusy, "{what}");
    vol.dismount();
}

#[test]
fn r2_second_segment_not_issued_after_key_block_direct_read() {
    r2_case("direct read", BOTH_ON, false);
}

#[test]
fn r2_second_segment_not_issued_after_key_block_direct_write() {
    r2_case("direct write", BOTH_ON, true);
}

#[test]
fn r2_second_fragment_not_issued_after_key_block_legacy_read() {
    r2_case("legacy read", BOTH_OFF, false);
}

#[test]
fn r2_second_fragment_not_issued_after_key_block_legacy_write() {
    r2_case("legacy write", BOTH_OFF, true);
}

#[test]
fn r2_path_counters_show_which_path_each_case_took() {
    // The R2 cases above rely on the gates to pick the path; check that they do.
    let p = with_fragment(params(MIB, BOTH_ON), 64 * 1024);
    let vol = mount(host_for(&p), p);
    let (s, _, _) = read(&vol, 0, 128 * 1024);
    assert_eq!(s, Status::Success);
    assert_eq!(vol.counters.snapshot().direct_reads, 1);
    vol.dismount();
}

/// One request of a random shape: reads of any size, writes that store the bytes the medium
/// already holds (so every successful read has exactly one right answer).
fn random_request(
    rng: &mut StdRng,
    size: u64,
    truth: &Arc<Vec<u8>>,
    done: impl FnOnce(Completion) + Send + 'static,
) -> (bool, u64, usize, TestRequest) {
    let sectors: u64 = if rng.gen_bool(0.15) {
        rng.gen_range(2049..=3072) // legacy: over 1 MiB
    } else {
        rng.gen_range(1..=256)
    };
    let len = (sectors * 512) as usize;
    let off = 512 * rng.gen_range(0..=(size - len as u64) / 512);
    let write = rng.gen_bool(0.4);
    let req = if write {
        TestRequest::write(off, &truth[off as usize..off as usize + len], done)
    } else {
        TestRequest::read(off, len as u32, done)
    };
    (write, off, len, req)
}

#[test]
fn r3_erase_racing_in_flight_io_never_returns_wrong_plaintext() {
    with_watchdog(WAIT, "r3", || {
        let size = 8 * MIB;
        let p = params(size, BOTH_ON);
        let mem = MemoryHost::new(DATA_OFFSET + size).with_latency(Duration::from_micros(300));
        let host = ProbeHost::new(mem);
        let truth = Arc::new(pattern(3, size as usize));
        put_plain(&host.mem, DATA_OFFSET, 0, &truth);
        let vol = mount(host.clone(), p);
        let erased = Arc::new(AtomicBool::new(false));
        let succeeded = Arc::new(AtomicU64::new(0));
        let submitters: Vec<_> = (0..6u64)
            .map(|t| {
                let vol = Arc::clone(&vol);
                let truth = Arc::clone(&truth);
                let erased = Arc::clone(&erased);
                let succeeded = Arc::clone(&succeeded);
                std::thread::spawn(move || {
                    let mut rng = StdRng::seed_from_u64(300 + t);
                    let (mut ok, mut busy, mut after) = (0u64, 0u64, 0u32);
                    while after < 3 {
                        if erased.load(Ordering::SeqCst) {
                            after += 1;
                        }
                        // Four in flight per submitter.
                        let batch: Vec<_> = (0..4)
                            .map(|_| {
                                let (tx, rx) = mpsc::channel();
                                let (w, off, len, req) =
                                    random_request(&mut rng, size, &truth, move |c| {
                                        let _ = tx.send(c);
                                    });
                                vol.dispatch(req);
                                (w, off, len, rx)
                            })
                            .collect();
                        for (w, off, len, rx) in batch {
                            let c = wait(&rx);
                            match c.status {
                                Status::Success => {
                                    ok += 1;
                                    succeeded.fetch_add(1, Ordering::SeqCst);
                                    assert_eq!(c.information, len);
                                    if !w {
                                        let b = c.buf.unwrap();
                                        assert!(
                                            b.as_slice() == &truth[off as usize..off as usize + len],
                                            "a successful read returned wrong plaintext at {off}+{len}"
                                        );
                                    }
                                }
                                Status::DeviceBusy => {
                                    busy += 1;
                                    assert_eq!(c.information, 0);
                                }
                                other => panic!("unexpected status {other:?}"),
                            }
                        }
                    }
                    (ok, busy)
                })
            })
            .collect();
        // Erase in the middle of the traffic: after every submitter is well under way.
        wait_for("48 requests succeeded before the erase", || {
            succeeded.load(Ordering::SeqCst) >= 48
        });
        vol.erase_keys();
        assert!(vol.key().is_erased());
        erased.store(true, Ordering::SeqCst);
        let (mut ok, mut busy) = (0, 0);
        for s in submitters {
            let (o, b) = s.join().expect("submitter");
            ok += o;
            busy += b;
        }
        assert!(
            ok > 0 && busy > 0,
            "ok {ok}, busy {busy}: the race did not happen"
        );
        assert_eq!(vol.key().late_users(), 0, "crypto ran after erase returned");
        // Nothing was ever written with a wrong (erased) key: the medium still decrypts.
        assert!(
            get_plain(&host.mem, DATA_OFFSET, 0, size as usize) == *truth,
            "medium corrupted"
        );
        vol.dismount();
    });
}

fn dismount_under_load(gates: Gates) {
    let size = 8 * MIB;
    let p = params(size, gates);
    let mem = MemoryHost::new(DATA_OFFSET + size).with_latency(Duration::from_micros(300));
    let host = ProbeHost::new(mem);
    let truth = Arc::new(pattern(4, size as usize));
    put_plain(&host.mem, DATA_OFFSET, 0, &truth);
    let vol = mount(host.clone(), p);
    let submitted = Arc::new(AtomicU64::new(0));
    let completed = Arc::new(AtomicU64::new(0));
    let submitters: Vec<_> = (0..6u64)
        .map(|t| {
            let vol = Arc::clone(&vol);
            let truth = Arc::clone(&truth);
            let submitted = Arc::clone(&submitted);
            let completed = Arc::clone(&completed);
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(400 + t);
                let mut statuses = Vec::new();
                let mut refused = 0;
                while refused < 2 {
                    let batch: Vec<_> = (0..4)
                        .map(|_| {
                            let (tx, rx) = mpsc::channel();
                            let completed = Arc::clone(&completed);
                            let (w, off, len, req) =
                                random_request(&mut rng, size, &truth, move |c| {
                                    completed.fetch_add(1, Ordering::SeqCst);
                                    let _ = tx.send(c);
                                });
                            submitted.fetch_add(1, Ordering::SeqCst);
                            vol.dispatch(req);
                            (w, off, len, rx)
                        })
                        .collect();
                    for (w, off, len, rx) in batch {
                        let c = wait(&rx);
                        // Exactly once: a second completion could not send (FnOnce), and a
                        // lost one would have panicked in TestRequest::drop or timed out.
                        assert!(rx.try_recv().is_err());
                        match c.status {
                            Status::Success if !w => assert!(
                                c.buf.unwrap().as_slice()
                                    == &truth[off as usize..off as usize + len]
                            ),
                            Status::Success => {}
                            Status::DeviceNotReady => refused += 1,
                            other => panic!("unexpected status {other:?}"),
                        }
                        statuses.push(c.status);
                    }
                }
                statuses
            })
        })
        .collect();
    // Dismount in the middle of the traffic, once both paths have served requests.
    wait_for("traffic on both paths before the dismount", || {
        let c = vol.counters.snapshot();
        let direct_ok = gates != BOTH_ON || c.direct_reads + c.direct_writes > 0;
        completed.load(Ordering::SeqCst) >= 48 && direct_ok && c.legacy_reads + c.legacy_writes > 0
    });
    vol.dismount();
    assert_eq!(
        host.in_flight(),
        0,
        "a host operation outlived dismount ({gates})"
    );
    assert!(vol.key().is_erased(), "keys not erased ({gates})");
    assert_eq!(vol.in_flight(), 0);
    let mut ok = 0;
    for s in submitters {
        ok += s
            .join()
            .expect("submitter")
            .iter()
            .filter(|s| s.is_success())
            .count();
    }
    assert!(ok > 0, "nothing succeeded before the dismount ({gates})");
    assert_eq!(
        completed.load(Ordering::SeqCst),
        submitted.load(Ordering::SeqCst),
        "every request completed exactly once ({gates})"
    );
    for r in [read(&vol, 0, 4096).0, write(&vol, 0, &truth[..4096]).0] {
        assert_eq!(r, Status::DeviceNotReady, "after dismount ({gates})");
    }
    let c = vol.counters.snapshot();
    if gates == BOTH_ON {
        assert!(c.direct_reads + c.direct_writes > 0);
    } else {
        assert_eq!(c.direct_reads + c.direct_writes, 0);
    }
    assert!(c.legacy_reads + c.legacy_writes > 0);
}

#[test]
fn r13_dismount_under_load_legacy_completes_everything_once_and_erases_keys() {
    with_watchdog(WAIT, "dismount legacy", || dismount_under_load(BOTH_OFF));
}

#[test]
fn r13_dismount_under_load_direct_completes_everything_once_and_erases_keys() {
    with_watchdog(WAIT, "dismount direct", || dismount_under_load(BOTH_ON));
}
