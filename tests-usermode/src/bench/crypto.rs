//! `vcbench crypto`: single-core AES-256-XTS throughput of the engine's cipher beside OpenSSL's.
//!
//! Like with like: encryption and decryption are measured separately on both sides, at 512 B,
//! 4 KiB, 64 KiB and 1 MiB, for every path this build can run on this CPU (the hardware path,
//! the wide VAES path where the CPU has it, and the portable `aes`-crate path for comparison).
//! Rounds are interleaved (ours, then OpenSSL's, per size and direction) and each figure is the
//! median of the rounds; the ratio is ours over OpenSSL's from the same rounds. The CPU model
//! and its AES-related flags are printed beside the figures. On a CPU without VAES the wide
//! path is reported as not measurable, never as met.
//!
//! Then every one of VeraCrypt's fifteen algorithms (the single ciphers and the cascades) on
//! the engine's volume cipher (`VolumeCipher`, the data path's), at 4 KiB and 1 MiB, each way,
//! the median of the same number of rounds.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use vcdirect::crypto::{VolumeCipher, WideVectors, XtsCipher, ALGORITHMS, MAX_KEY_AREA};

use super::report::median;

/// Buffer sizes measured, in bytes.
pub const SIZES: [usize; 4] = [512, 4096, 64 << 10, 1 << 20];

/// Which way the bytes go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Way {
    /// Encryption only.
    Encrypt,
    /// Decryption only.
    Decrypt,
}

fn key() -> [u8; 64] {
    core::array::from_fn(|i| (i as u8).wrapping_mul(7).wrapping_add(1))
}

/// GB/s (10^9 bytes per second) of `cipher` one way on buffers of `len` bytes, over about
/// `each` of work.
pub fn xts_gbps(
    cipher: &XtsCipher,
    wide: Option<&WideVectors>,
    way: Way,
    len: usize,
    each: Duration,
) -> f64 {
    let mut buf = vec![0xA5u8; len];
    let t = Instant::now();
    let mut bytes = 0u64;
    let mut unit = 1_000_000u64;
    while t.elapsed() < each {
        for _ in 0..8 {
            match (way, wide) {
                (Way::Encrypt, None) => cipher.encrypt(&mut buf, unit),
                (Way::Decrypt, None) => cipher.decrypt(&mut buf, unit),
                (Way::Encrypt, Some(w)) => hardware(cipher).encrypt_wide(w, &mut buf, unit),
                (Way::Decrypt, Some(w)) => hardware(cipher).decrypt_wide(w, &mut buf, unit),
            }
            unit += (len / 512) as u64;
            bytes += len as u64;
        }
    }
    bytes as f64 / t.elapsed().as_secs_f64() / 1e9
}

/// Sizes every algorithm is measured at, in bytes.
pub const ALGORITHM_SIZES: [usize; 2] = [4096, 1 << 20];

fn key_area() -> [u8; MAX_KEY_AREA] {
    core::array::from_fn(|i| (i as u8).wrapping_mul(7).wrapping_add(1))
}

/// GB/s of the volume cipher `cipher` one way on buffers of `len` bytes, over about `each`
/// (at least one buffer: the slowest cascades take a while per MiB).
pub fn volume_gbps(cipher: &VolumeCipher, way: Way, len: usize, each: Duration) -> f64 {
    let mut buf = vec![0xA5u8; len];
    let t = Instant::now();
    let mut bytes = 0u64;
    let mut unit = 1_000_000u64;
    while bytes == 0 || t.elapsed() < each {
        match way {
            Way::Encrypt => cipher.encrypt(&mut buf, unit),
            Way::Decrypt => cipher.decrypt(&mut buf, unit),
        }
        unit += (len / 512) as u64;
        bytes += len as u64;
    }
    bytes as f64 / t.elapsed().as_secs_f64() / 1e9
}

/// Every algorithm's GB/s at [`ALGORITHM_SIZES`], each way (median of `rounds`), printed; the
/// JSON rows.
fn algorithms(rounds: usize, each: Duration) -> Vec<Value> {
    let key = key_area();
    println!("Every algorithm on the engine's volume cipher, one core (GB/s)");
    println!(
        "  {:<28} {:>7}  {:>13} {:>13}",
        "algorithm", "buffer", "encrypt GB/s", "decrypt GB/s"
    );
    let mut rows = Vec::new();
    for alg in ALGORITHMS {
        let cipher = VolumeCipher::new(alg, &key[..alg.key_len()]);
        for &len in &ALGORITHM_SIZES {
            let mut enc = Vec::new();
            let mut dec = Vec::new();
            for _ in 0..rounds.max(1) {
                enc.push(volume_gbps(&cipher, Way::Encrypt, len, each));
                dec.push(volume_gbps(&cipher, Way::Decrypt, len, each));
            }
            let enc = median(&mut enc).unwrap_or(0.0);
            let dec = median(&mut dec).unwrap_or(0.0);
            println!(
                "  {:<28} {:>7}  {:>13.3} {:>13.3}",
                alg.name(),
                size_name(len),
                enc,
                dec
            );
            rows.push(json!({
                "algorithm": alg.name(), "path": cipher.path(), "bytes": len,
                "encrypt_gbps": enc, "decrypt_gbps": dec,
            }));
        }
    }
    rows
}

/// The hardware keys of a cipher measured on the wide path (only one on the AES instructions
/// is: see `run_with`).
fn hardware(cipher: &XtsCipher) -> &vcdirect_aes_hw::XtsKeys {
    cipher
        .hardware()
        .expect("the wide path is measured on the hardware path only")
}

/// `openssl speed -evp aes-256-xts` one way at `len` bytes (GB/s), if openssl is on PATH.
pub fn openssl_gbps(way: Way, len: usize, seconds: u32) -> Option<f64> {
    let mut cmd = Command::new("openssl");
    cmd.args(["speed", "-elapsed", "-seconds", &seconds.to_string()]);
    if way == Way::Decrypt {
        cmd.arg("-decrypt");
    }
    cmd.args(["-bytes", &len.to_string(), "-evp", "aes-256-xts"]);
    let out = cmd.output().ok()?;
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
}

/// The CPU's model name and the AES-related flags it reports (Linux /proc/cpuinfo).
pub fn cpu() -> (String, Vec<String>) {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let model = field("model name")
        .or_else(|| field("CPU part").map(|p| format!("CPU part {p}")))
        .unwrap_or_else(|| "unknown".into());
    let wanted = [
        "aes",
        "pclmulqdq",
        "avx",
        "avx2",
        "avx512f",
        "vaes",
        "vpclmulqdq",
        "pmull",
        "sha2",
    ];
    let flags = field("flags")
        .or_else(|| field("Features"))
        .unwrap_or_default();
    let flags = flags
        .split_whitespace()
        .filter(|f| wanted.contains(f))
        .map(String::from)
        .collect();
    (model, flags)
}

fn size_name(len: usize) -> String {
    match len {
        l if l >= 1 << 20 => format!("{} MiB", l >> 20),
        l if l >= 1 << 10 => format!("{} KiB", l >> 10),
        l => format!("{l} B"),
    }
}

/// Runs the crypto benchmark (`rounds` interleaved rounds), prints it, and returns its JSON.
pub fn run_with(rounds: usize, each: Duration, openssl_seconds: u32) -> Value {
    let (model, flags) = cpu();
    let backend = vcdirect::crypto::backend();
    println!(
        "AES-256-XTS, one core; CPU: {model}; AES-related flags: {}",
        flags.join(" ")
    );
    let vectors = vcdirect_aes_hw::WideVectors::in_user_mode();
    let hw = XtsCipher::new(&key());
    let portable = XtsCipher::portable(&key());
    // (name, cipher, wide registers): the hardware path, its wide form, the portable path.
    let mut paths: Vec<(&str, &XtsCipher, Option<&WideVectors>)> = vec![(hw.path(), &hw, None)];
    if let (Some(v), true) = (vectors.as_ref(), hw.path() == "aes-ni") {
        paths.push(("vaes", &hw, Some(v)));
    }
    if hw.path() != "aes-crate" {
        paths.push(("aes-crate", &portable, None));
    }
    let names: Vec<&str> = paths.iter().map(|p| p.0).collect();
    let has_openssl = openssl_gbps(Way::Encrypt, 512, 1).is_some();
    // samples[(path, way, size)] and openssl[(way, size)], one per round.
    let ways = [Way::Encrypt, Way::Decrypt];
    let mut ours = vec![vec![vec![Vec::new(); SIZES.len()]; ways.len()]; paths.len()];
    let mut theirs = vec![vec![Vec::new(); SIZES.len()]; ways.len()];
    for _ in 0..rounds.max(1) {
        for (s, &len) in SIZES.iter().enumerate() {
            for (w, &way) in ways.iter().enumerate() {
                for (p, (_, cipher, wide)) in paths.iter().enumerate() {
                    ours[p][w][s].push(xts_gbps(cipher, *wide, way, len, each));
                }
                if has_openssl {
                    if let Some(g) = openssl_gbps(way, len, openssl_seconds) {
                        theirs[w][s].push(g);
                    }
                }
            }
        }
    }
    let med = |v: &mut Vec<f64>| median(v);
    let mut rows = Vec::new();
    println!(
        "  {:<10} {:>7}  {:>13} {:>13} {:>13} {:>13}  {:>9} {:>9}",
        "path",
        "buffer",
        "encrypt GB/s",
        "decrypt GB/s",
        "openssl enc",
        "openssl dec",
        "enc ratio",
        "dec ratio"
    );
    for (p, name) in names.iter().enumerate() {
        for (s, &len) in SIZES.iter().enumerate() {
            let enc = med(&mut ours[p][0][s]).unwrap_or(0.0);
            let dec = med(&mut ours[p][1][s]).unwrap_or(0.0);
            let oenc = med(&mut theirs[0][s].clone());
            let odec = med(&mut theirs[1][s].clone());
            let ratio = |a: f64, b: Option<f64>| b.filter(|b| *b > 0.0).map(|b| a / b);
            let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
            println!(
                "  {:<10} {:>7}  {:>13.2} {:>13.2} {:>13} {:>13}  {:>9} {:>9}",
                name,
                size_name(len),
                enc,
                dec,
                fmt(oenc),
                fmt(odec),
                fmt(ratio(enc, oenc)),
                fmt(ratio(dec, odec)),
            );
            rows.push(json!({
                "path": name, "bytes": len,
                "encrypt_gbps": enc, "decrypt_gbps": dec,
                "openssl_encrypt_gbps": oenc, "openssl_decrypt_gbps": odec,
                "encrypt_ratio": ratio(enc, oenc), "decrypt_ratio": ratio(dec, odec),
            }));
        }
    }
    if !has_openssl {
        println!("  (openssl not found on PATH or its output not understood: no comparison)");
    }
    let vaes = if names.contains(&"vaes") {
        "measured (rows `vaes`)"
    } else if flags.iter().any(|f| f == "vaes") {
        "not measurable: the CPU reports VAES but not every instruction the path needs"
    } else {
        "not measurable: the CPU has no VAES"
    };
    println!("  VAES path: {vaes}");
    let algorithms = algorithms(rounds, each);
    json!({
        "backend": backend,
        "cpu_model": model,
        "cpu_aes_flags": flags,
        "rounds": rounds,
        "unit": "GB/s (10^9 bytes/s), one way, one core, median of the interleaved rounds",
        "results": rows,
        "vaes": vaes,
        "algorithms": algorithms,
    })
}

/// `vcbench crypto`: 3 rounds, 300 ms per figure of ours, 1 s per OpenSSL figure.
pub fn run() -> Value {
    run_with(3, Duration::from_millis(300), 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_is_positive_and_finite() {
        let cipher = XtsCipher::new(&key());
        for way in [Way::Encrypt, Way::Decrypt] {
            let g = xts_gbps(&cipher, None, way, 4096, Duration::from_millis(20));
            assert!(g.is_finite() && g > 0.0);
        }
    }

    #[test]
    fn every_algorithm_throughput_is_positive_and_finite() {
        let key = key_area();
        for alg in [ALGORITHMS[1], ALGORITHMS[14]] {
            let cipher = VolumeCipher::new(alg, &key[..alg.key_len()]);
            for way in [Way::Encrypt, Way::Decrypt] {
                let g = volume_gbps(&cipher, way, 4096, Duration::from_millis(5));
                assert!(g.is_finite() && g > 0.0, "{}", alg.name());
            }
        }
    }

    #[test]
    fn sizes_are_named_as_printed() {
        let names: Vec<String> = SIZES.iter().map(|&s| size_name(s)).collect();
        assert_eq!(names, ["512 B", "4 KiB", "64 KiB", "1 MiB"]);
    }
}
