//! W6: a platform's own allocation-failure injection reaches every fallible allocation of the
//! engine through the platform seam (`platform::install_allocation_injection`), as the kernel
//! glue's Wine build installs its mount-thread rule at DriverEntry. Runs only with the
//! `allocation-injection` feature (`cargo test -p vcdirect --features allocation-injection
//! --test allocation_injection`, in the unit stage of scripts/test-all.sh).

use std::sync::atomic::{AtomicU64, Ordering};

use vcdirect::barrier::RangeLock;
use vcdirect::faults::allocation_fails;
use vcdirect::platform::{install_allocation_injection, AllocationInjection};
use vcdirect::Status;

/// Fails the allocation whose 1-based number equals `FAIL_AT` (0: none), counting every ask.
struct Counting;

static ASKED: AtomicU64 = AtomicU64::new(0);
static FAIL_AT: AtomicU64 = AtomicU64::new(0);

impl AllocationInjection for Counting {
    fn fails(&self) -> bool {
        let n = ASKED.fetch_add(1, Ordering::SeqCst) + 1;
        n == FAIL_AT.load(Ordering::SeqCst)
    }
}

static RULE: &dyn AllocationInjection = &Counting;

fn arm(fail_at: u64) {
    ASKED.store(0, Ordering::SeqCst);
    FAIL_AT.store(fail_at, Ordering::SeqCst);
}

// One test function: the injection is process-wide, as the glue's is.
#[test]
fn w6_an_installed_injection_is_asked_by_the_engine_and_fails_exactly_its_allocation() {
    arm(0);
    assert!(
        !allocation_fails(),
        "nothing is installed yet: nothing fails"
    );
    assert_eq!(
        ASKED.load(Ordering::SeqCst),
        0,
        "nothing installed, nothing asked"
    );

    assert!(
        install_allocation_injection(&RULE),
        "the first install takes"
    );
    assert!(
        !install_allocation_injection(&RULE),
        "a second install changes nothing"
    );

    // Count what one engine constructor asks with nothing failing.
    arm(0);
    assert!(RangeLock::with_capacity(16).is_ok());
    let sites = ASKED.load(Ordering::SeqCst);
    assert!(
        sites >= 2,
        "the range lock's tables ask the injection ({sites})"
    );

    // Each of them, failed in turn, fails the constructor with the pool's status.
    for n in 1..=sites {
        arm(n);
        match RangeLock::with_capacity(16) {
            Err(status) => assert_eq!(status, Status::InsufficientResources, "site {n}"),
            Ok(_) => panic!("allocation {n} of {sites} failed, yet the range lock was made"),
        }
    }
    arm(sites + 1);
    assert!(
        RangeLock::with_capacity(16).is_ok(),
        "past the last site nothing fails"
    );
}
