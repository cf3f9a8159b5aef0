//! W5's stack scans: run some work deep on a thread of its own, then read that thread's whole
//! stack mapping through /proc/self/mem and find every 16-byte secret of a set (round keys,
//! tweaks) left in it. Linux only (/proc).

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

/// Secrets to look for, keyed by their first 8 bytes (little-endian).
pub type Patterns = HashMap<u64, [u8; 16]>;

/// Adds `secret` to `patterns`.
pub fn add(patterns: &mut Patterns, secret: [u8; 16]) {
    patterns.insert(u64::from_le_bytes(secret[..8].try_into().unwrap()), secret);
}

/// Runs `work` 64 KiB below the caller, so the frames it leaves behind lie deeper than
/// anything the scan itself calls.
#[inline(never)]
pub fn deep(work: &dyn Fn()) {
    let pad = std::hint::black_box([0u8; 64 << 10]);
    work();
    std::hint::black_box(&pad);
}

/// Offsets in this thread's stack mapping where a secret in `patterns` lies.
pub fn scan_own_stack(patterns: &Patterns) -> Vec<usize> {
    let here = &patterns as *const _ as u64;
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    let (start, end) = maps
        .lines()
        .filter_map(|l| {
            let (a, b) = l.split_whitespace().next()?.split_once('-')?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .find(|&(a, b)| (a..b).contains(&here))
        .expect("the mapping that holds this thread's stack");
    let mut stack = vec![0u8; (end - start) as usize];
    let mut mem = File::open("/proc/self/mem").expect("open /proc/self/mem");
    mem.seek(SeekFrom::Start(start)).expect("seek");
    mem.read_exact(&mut stack)
        .expect("read this thread's stack");
    (0..stack.len().saturating_sub(15))
        .filter(|&i| {
            let head = u64::from_le_bytes(stack[i..i + 8].try_into().unwrap());
            patterns
                .get(&head)
                .is_some_and(|k| stack[i..i + 16] == k[..])
        })
        .collect()
}

/// Runs `work` deep on a thread named `name`, then scans that thread's stack for `patterns`.
pub fn hits_after(name: &str, work: &(dyn Fn() + Sync), patterns: &Patterns) -> Vec<usize> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name(name.into())
            .stack_size(1 << 20)
            .spawn_scoped(s, || {
                deep(work);
                scan_own_stack(patterns)
            })
            .expect("spawn")
            .join()
            .expect("the scanned thread")
    })
}
