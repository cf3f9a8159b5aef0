//! How many encryption threads the kernel starts, and which processor group each one serves.
//!
//! Owns: VeraCrypt's sizing of its encryption thread pool (EncryptionThreadPoolStart): CPUs
//! minus `VeraCryptEncryptionFreeCpuCount`, no pool below 2 threads, at most 64 threads in one
//! processor group and 256 across groups; threads bound to groups in order (the first group's
//! processors first). Never: starts threads or splits buffers (the kernel glue and
//! [`CryptoPool`](super::CryptoPool) do).

/// Most threads with one processor group (VeraCrypt's TC_ENC_THREAD_POOL_LEGACY_MAX_THREAD_COUNT).
pub const MAX_THREADS_ONE_GROUP: usize = 64;
/// Most threads with more than one processor group (TC_ENC_THREAD_POOL_MAX_THREAD_COUNT).
pub const MAX_THREADS_GROUPS: usize = 256;

/// Threads of the encryption pool for `cpus` active processors in `groups` processor groups
/// with `free_cpus` left free: 0 (no pool: every caller encrypts on its own thread) below 2.
pub fn encryption_threads(cpus: usize, free_cpus: usize, groups: usize) -> usize {
    let threads = cpus.saturating_sub(free_cpus);
    if threads < 2 {
        return 0;
    }
    let max = if groups > 1 {
        MAX_THREADS_GROUPS
    } else {
        MAX_THREADS_ONE_GROUP
    };
    threads.min(max)
}

/// The processor group of pool thread `index` (0-based) when the groups have `per_group`
/// active processors each, in group order: the group holding processor number `index` counted
/// across groups; the last group for an index past every processor, group 0 without groups.
pub fn thread_group(index: usize, per_group: impl IntoIterator<Item = usize>) -> u16 {
    let mut seen = 0usize;
    let mut last = 0u16;
    for (group, count) in per_group.into_iter().enumerate() {
        last = u16::try_from(group).unwrap_or(u16::MAX);
        seen = seen.saturating_add(count);
        if index < seen {
            return last;
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_pool_none_below_two_threads() {
        assert_eq!(encryption_threads(1, 0, 1), 0);
        assert_eq!(encryption_threads(4, 3, 1), 0);
        assert_eq!(encryption_threads(4, 4, 1), 0);
        assert_eq!(encryption_threads(4, 9, 1), 0);
        assert_eq!(encryption_threads(4, 2, 1), 2);
        assert_eq!(encryption_threads(2, 0, 1), 2);
    }

    #[test]
    fn kernel_pool_is_capped_at_64_threads_in_one_group_and_256_across_groups() {
        assert_eq!(encryption_threads(64, 0, 1), 64);
        assert_eq!(encryption_threads(128, 0, 1), 64);
        assert_eq!(encryption_threads(128, 0, 2), 128);
        assert_eq!(encryption_threads(640, 0, 10), 256);
        assert_eq!(encryption_threads(640, 600, 10), 40);
    }

    #[test]
    fn kernel_pool_threads_are_bound_to_groups_in_processor_order() {
        let groups = [64usize, 64, 32];
        assert_eq!(thread_group(0, groups), 0);
        assert_eq!(thread_group(63, groups), 0);
        assert_eq!(thread_group(64, groups), 1);
        assert_eq!(thread_group(127, groups), 1);
        assert_eq!(thread_group(128, groups), 2);
        assert_eq!(thread_group(159, groups), 2);
        assert_eq!(thread_group(500, groups), 2);
        assert_eq!(thread_group(3, [0usize; 0]), 0);
        // Uneven groups (36 + 36 processors): thread 36 is the second group's first.
        assert_eq!(thread_group(35, [36usize, 36]), 0);
        assert_eq!(thread_group(36, [36usize, 36]), 1);
    }
}
