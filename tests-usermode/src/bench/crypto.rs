//! `vcbench crypto`: single-core AES-256-XTS throughput of the engine's cipher.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use vcdirect::crypto::XtsCipher;

use super::report::median;

/// GB/s (10^9 bytes per second, encrypt and decrypt bytes both counted) of `XtsCipher` on
/// buffers of `len` bytes: the median of `repeats` timed loops of about `each` each.
pub fn xts_gbps(len: usize, repeats: usize, each: Duration) -> f64 {
    let key: [u8; 64] = core::array::from_fn(|i| (i as u8).wrapping_mul(7).wrapping_add(1));
    let cipher = XtsCipher::new(&key);
    let mut buf = vec![0xA5u8; len];
    let mut samples: Vec<f64> = (0..repeats.max(1))
        .map(|r| {
            let t = Instant::now();
            let mut bytes = 0u64;
            let mut unit = r as u64 * 1_000_000;
            while t.elapsed() < each {
                for _ in 0..8 {
                    cipher.encrypt(&mut buf, unit);
                    cipher.decrypt(&mut buf, unit);
                    unit += (len / 512) as u64;
                    bytes += 2 * len as u64;
                }
            }
            bytes as f64 / t.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    median(&mut samples).unwrap_or(0.0)
}

/// `openssl speed`'s AES-256-XTS numbers (GB/s) at 4 KiB and 1 MiB, if openssl is on PATH.
pub fn openssl_gbps() -> Option<(f64, f64)> {
    let at = |bytes: &str| -> Option<f64> {
        let out = Command::new("openssl")
            .args([
                "speed",
                "-elapsed",
                "-seconds",
                "2",
                "-bytes",
                bytes,
                "-evp",
                "aes-256-xts",
            ])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        // The last line: "AES-256-XTS   1234567.89k" (1000s of bytes per second).
        let line = text
            .lines()
            .rev()
            .find(|l| l.to_ascii_lowercase().starts_with("aes-256-xts"))?;
        let k: f64 = line
            .split_whitespace()
            .last()?
            .trim_end_matches('k')
            .parse()
            .ok()?;
        Some(k * 1000.0 / 1e9)
    };
    Some((at("4096")?, at("1048576")?))
}

/// Runs the crypto benchmark, prints it, and returns its JSON.
pub fn run() -> Value {
    let backend = vcdirect::crypto::backend();
    println!("AES-256-XTS, single core, encrypt+decrypt, backend {backend}");
    let g4 = xts_gbps(4096, 5, Duration::from_millis(400));
    println!("  vcdirect XtsCipher  4 KiB buffers: {g4:6.2} GB/s");
    let g1 = xts_gbps(1 << 20, 5, Duration::from_millis(400));
    println!("  vcdirect XtsCipher  1 MiB buffers: {g1:6.2} GB/s");
    let ossl = openssl_gbps();
    match ossl {
        Some((o4, o1)) => {
            println!("  for comparison, openssl speed -evp aes-256-xts (encrypt only):");
            println!("    openssl  4 KiB: {o4:6.2} GB/s");
            println!("    openssl  1 MiB: {o1:6.2} GB/s");
        }
        None => {
            println!("  (openssl not found on PATH or its output not understood: no comparison)")
        }
    }
    json!({
        "backend": backend,
        "aes256_xts_gbps_4k": g4,
        "aes256_xts_gbps_1m": g1,
        "unit": "GB/s (10^9 bytes/s), encrypt and decrypt bytes both counted, one core, median of 5",
        "openssl_encrypt_gbps_4k": ossl.map(|o| o.0),
        "openssl_encrypt_gbps_1m": ossl.map(|o| o.1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_is_positive_and_finite() {
        let g = xts_gbps(4096, 1, Duration::from_millis(20));
        assert!(g.is_finite() && g > 0.0);
    }
}
