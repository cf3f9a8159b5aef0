//! Per-volume path counters: what proves which path served what (docs/review.md R10, R12).

use core::sync::atomic::{AtomicU64, Ordering};

/// Why a request took the legacy path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LegacyReason {
    /// The volume's gate for this direction is off (or the volume is not eligible for it, R7).
    GateOff,
    /// The host is a container file.
    FileContainer,
    /// Longer than 1 MiB.
    TooLarge,
    /// The caller's buffer does not satisfy the host's alignment mask.
    UnalignedBuffer,
}

impl LegacyReason {
    /// Every reason, in counter order.
    pub const ALL: [LegacyReason; 4] = [
        LegacyReason::GateOff,
        LegacyReason::FileContainer,
        LegacyReason::TooLarge,
        LegacyReason::UnalignedBuffer,
    ];

    /// A stable lower-case name (JSON keys).
    pub const fn name(self) -> &'static str {
        match self {
            LegacyReason::GateOff => "gate_off",
            LegacyReason::FileContainer => "file_container",
            LegacyReason::TooLarge => "too_large",
            LegacyReason::UnalignedBuffer => "unaligned_buffer",
        }
    }
}

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// Live counters (atomics).
        #[derive(Default)]
        pub struct Counters {
            $($(#[$doc])* pub(crate) $name: AtomicU64,)*
            pub(crate) legacy_by_reason: [AtomicU64; 4],
        }

        /// A copy of the counters at one moment.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct CounterSnapshot {
            $($(#[$doc])* pub $name: u64,)*
            /// Legacy routings by [`LegacyReason`] (index = position in `LegacyReason::ALL`).
            pub legacy_by_reason: [u64; 4],
        }

        impl Counters {
            /// Reads every counter.
            pub fn snapshot(&self) -> CounterSnapshot {
                CounterSnapshot {
                    $($name: self.$name.load(Ordering::Relaxed),)*
                    legacy_by_reason: [
                        self.legacy_by_reason[0].load(Ordering::Relaxed),
                        self.legacy_by_reason[1].load(Ordering::Relaxed),
                        self.legacy_by_reason[2].load(Ordering::Relaxed),
                        self.legacy_by_reason[3].load(Ordering::Relaxed),
                    ],
                }
            }
        }

        impl CounterSnapshot {
            /// (name, value) pairs, for JSON and status output.
            pub fn fields(&self) -> [(&'static str, u64); [$(stringify!($name)),*].len()] {
                [$((stringify!($name), self.$name)),*]
            }
        }
    };
}

counters! {
    /// Reads served by the direct path.
    direct_reads,
    /// Writes served by the direct path.
    direct_writes,
    /// Bytes moved by the direct path.
    direct_bytes,
    /// Host transfers issued by the direct path.
    direct_segments,
    /// Flushes ordered and sent to the host (direct-write volumes).
    direct_flushes,
    /// Reads served by the legacy queue.
    legacy_reads,
    /// Writes served by the legacy queue.
    legacy_writes,
    /// Bytes moved by the legacy queue.
    legacy_bytes,
    /// Fragments issued by the legacy queue.
    legacy_fragments,
    /// Flushes completed at once with success (VeraCrypt's behaviour).
    immediate_flushes,
    /// Times a granted direct request found all 8 slots busy and waited.
    slot_waits,
    /// Most direct requests the workers held at once (never above 8). Reads issued by
    /// dispatching threads hold no worker, only one of the 8 host permits.
    direct_in_flight_max,
    /// Requests that waited in the range ordering for an earlier overlapping one.
    range_waits,
    /// Requests refused at dispatch (validation, dismount).
    rejected,
    /// Requests that finished with a failure status after admission.
    failed,
    // Counters added later: the status reply carries them after its memory block.
    /// Direct reads and writes issued without a thread waiting for them and finished in the
    /// host's completion context (by the dispatching thread or a worker; part of
    /// `direct_reads` and `direct_writes`).
    detached,
    /// Of those, the ones the dispatching thread issued itself (one thread hand-off per
    /// request).
    dispatch_issued,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn legacy_reason(&self, reason: LegacyReason) {
        let i = LegacyReason::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or(0);
        self.legacy_by_reason[i].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn raise_max(counter: &AtomicU64, value: u64) {
        counter.fetch_max(value, Ordering::Relaxed);
    }
}
