//! `vcbench pool`: what splitting one buffer over the encryption pool costs and gains.
//!
//! For buffers of 16 KiB to 1 MiB, the time of `CryptoPool::run` encrypting the whole buffer
//! on the caller's thread, and split into two pieces of half each on the user-mode pool (the
//! hand-off to a pool thread and the wait for it included), on the XMM path and on the wide
//! (VAES) path where the CPU has it: where splitting starts to pay is the smallest piece worth
//! handing over (`crypto::MIN_PIECE`). Best of 7 runs of 200 operations each. Then the same
//! for Serpent and a three-cipher cascade (`kuznyechik-serpent-camellia`), 4 KiB to 64 KiB, on
//! the XMM platform: where splitting pays for the slower algorithms (`crypto::MIN_PIECE_SLOW`).

use std::time::Instant;

use serde_json::{json, Value};
use vcdirect::crypto::{
    Algorithm, Cipher, CryptoPool, VolumeKey, WideVectors, DATA_UNIT, MIN_PIECE, MIN_PIECE_SLOW,
};

use crate::host::MemoryHost;
use crate::std_platform::StdPlatform;

/// Buffer sizes measured, in bytes.
pub const SIZES: [usize; 7] = [
    16 << 10,
    32 << 10,
    64 << 10,
    128 << 10,
    256 << 10,
    512 << 10,
    1 << 20,
];

/// Buffer sizes measured for the slower algorithms, in bytes.
pub const SLOW_SIZES: [usize; 5] = [4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10];

/// Microseconds per `run` of `pool` on a buffer of `len` bytes (best of `runs`).
pub fn us_per_run(
    platform: &StdPlatform<MemoryHost>,
    key: &VolumeKey<StdPlatform<MemoryHost>>,
    pool: CryptoPool,
    len: usize,
    runs: usize,
    ops: u64,
) -> f64 {
    let mut buf = vec![0x11u8; len];
    (0..runs.max(1))
        .map(|_| {
            let t = Instant::now();
            for i in 0..ops {
                let unit = i * (len / DATA_UNIT) as u64;
                let _ = pool.run(platform, key, Cipher::Encrypt, &mut buf, unit);
            }
            t.elapsed().as_secs_f64() * 1e6 / ops as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// Runs the pool benchmark, prints it, and returns its JSON.
pub fn run() -> Value {
    let key_bytes: [u8; 64] = core::array::from_fn(|i| (i as u8).wrapping_mul(5) ^ 0x3c);
    let mut rows = Vec::new();
    println!(
        "encryption pool: one buffer on the caller's thread against two pieces on the pool \
         (us per buffer, best of 7); the engine splits only into pieces of {} KiB or more",
        MIN_PIECE >> 10
    );
    println!(
        "  {:<5} {:>8}  {:>12} {:>12}",
        "path", "buffer", "one thread", "two pieces"
    );
    let paths: &[(&str, bool)] = if WideVectors::available() {
        &[("xmm", false), ("vaes", true)]
    } else {
        &[("xmm", false)]
    };
    for &(name, wide) in paths {
        let platform: StdPlatform<MemoryHost> = if wide {
            StdPlatform::new(0)
        } else {
            StdPlatform::new(0).without_wide_vectors()
        };
        let key = VolumeKey::new(&platform, &key_bytes).expect("key");
        for len in SIZES {
            let one = us_per_run(&platform, &key, CryptoPool::inline(), len, 7, 200);
            let two = us_per_run(&platform, &key, CryptoPool::forced_split(2), len, 7, 200);
            println!("  {name:<5} {:>5} KiB  {one:>12.1} {two:>12.1}", len >> 10);
            rows.push(
                json!({"path": name, "bytes": len, "one_thread_us": one, "two_pieces_us": two}),
            );
        }
    }
    println!(
        "slower algorithms (XMM platform): the engine splits them into pieces of {} KiB or more",
        MIN_PIECE_SLOW >> 10
    );
    let platform: StdPlatform<MemoryHost> = StdPlatform::new(0).without_wide_vectors();
    for name in ["serpent", "kuznyechik-serpent-camellia"] {
        let Some(alg) = Algorithm::from_name(name) else {
            continue;
        };
        let key_area: Vec<u8> = (0..alg.key_len()).map(|i| (i as u8) ^ 0x5a).collect();
        let key = VolumeKey::with_algorithm(&platform, alg, &key_area).expect("key");
        for len in SLOW_SIZES {
            // About 2 MiB per run: the slowest algorithm stays near 20 ms a run.
            let ops = ((2 << 20) / len) as u64;
            let one = us_per_run(&platform, &key, CryptoPool::inline(), len, 7, ops);
            let two = us_per_run(&platform, &key, CryptoPool::forced_split(2), len, 7, ops);
            println!("  {name:<28} {:>3} KiB  {one:>10.1} {two:>10.1}", len >> 10);
            rows.push(
                json!({"path": name, "bytes": len, "one_thread_us": one, "two_pieces_us": two}),
            );
        }
    }
    json!({ "min_piece": MIN_PIECE, "min_piece_slow": MIN_PIECE_SLOW, "results": rows })
}
