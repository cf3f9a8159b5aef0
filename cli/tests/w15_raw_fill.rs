//! docs/review.md W15: the container's raw bytes, read from the file and not through any key,
//! are indistinguishable from random: header groups, the outer volume's free space, the hidden
//! volume's area and the reserved area behind it. (Through the outer key, zeros on disk would
//! decrypt to random-looking bytes, so only the raw bytes show a fill that wrote zeros.)
//!
//! Whatever `create` writes into the data area besides the fill (a filesystem, a hidden
//! header) goes through a volume's encryption, so every range checked here must look random
//! whatever else `create` does.
//!
//! The check bites: a vcctl built with the test-only fault switch `fill-writes-zeros`
//! (`vcctl::faults`, feature `fault-switches`, compiled only into test builds) writes plain
//! zeros as the fill, and the check then fails with its own message.

mod common;
use common::*;

use std::process::{Command, Stdio};

/// A sector of the container.
const SECTOR: usize = 512;
/// The chi-square bound of a byte histogram (255 degrees of freedom: mean 255, standard
/// deviation 22.6); 400 is 6.4 standard deviations above the mean, p below 1e-9 for uniform
/// random bytes.
const CHI_SQUARE_BOUND: f64 = 400.0;

/// Why the raw bytes `bytes` of the region `name` (at `start` in the file) are not
/// indistinguishable from random, or `Ok`: an all-zero sector, a sector that occurs twice (a
/// constant fill or a reused buffer), or a byte histogram that uniform bytes give with
/// probability below 1e-9.
fn check_random(name: &str, start: usize, bytes: &[u8]) -> Result<(), String> {
    assert!(bytes.len() >= SECTOR && bytes.len().is_multiple_of(SECTOR));
    let sectors: Vec<&[u8]> = bytes.chunks(SECTOR).collect();
    let zero: Vec<usize> = (0..sectors.len())
        .filter(|&i| sectors[i].iter().all(|&b| b == 0))
        .collect();
    if let Some(first) = zero.first() {
        return Err(format!(
            "raw {name}: {} of {} sectors are all zeros (the first at byte {}): not random fill",
            zero.len(),
            sectors.len(),
            start + first * SECTOR
        ));
    }
    let mut seen = std::collections::HashMap::new();
    for (i, s) in sectors.iter().enumerate() {
        if let Some(j) = seen.insert(*s, i) {
            return Err(format!(
                "raw {name}: the sector at byte {} repeats the one at byte {}: not random fill",
                start + i * SECTOR,
                start + j * SECTOR
            ));
        }
    }
    let x = chi_square(bytes);
    if x >= CHI_SQUARE_BOUND {
        return Err(format!(
            "raw {name}: byte histogram chi-square {x:.0} over {} bytes (bound {CHI_SQUARE_BOUND}): not random fill",
            bytes.len()
        ));
    }
    Ok(())
}

/// Creates a container (SHA-256, PIM 1: quick) with vcctl, the fault switches in `faults` on
/// (empty: none); returns its raw bytes and the regions to check (name, start, end).
fn create_raw(
    tag: &str,
    size: u64,
    hidden: Option<u64>,
    faults: &str,
) -> (Vec<u8>, Vec<(&'static str, usize, usize)>) {
    let f = TempPath::new(tag);
    let size_arg = size.to_string();
    let hidden_arg = hidden.map(|h| h.to_string());
    let mut args = vec![
        "volume",
        "create",
        f.0.to_str().unwrap(),
        "--password-stdin",
        "--size",
        &size_arg,
        "--prf",
        "sha256",
        "--pim",
        "1",
        "--quiet",
    ];
    if let Some(h) = &hidden_arg {
        args.extend_from_slice(&["--hidden-size", h]);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_vcctl"))
        .args(&args)
        .env("VCCTL_FAULTS", faults)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"o\nh\n")?;
            c.wait_with_output()
        })
        .expect("vcctl runs");
    let made = json(&ok(out));
    let bytes = std::fs::read(&f.0).unwrap();
    assert_eq!(bytes.len() as u64, size);
    let at = |k: &str| made[k].as_u64().expect("a number") as usize;
    let (data, data_end) = (at("data_offset"), at("data_offset") + at("data_size"));
    let mut regions = vec![("primary header group", 0, data)];
    match hidden {
        None => regions.push(("free space (the whole data area)", data, data_end)),
        Some(_) => {
            let (hs, he) = (
                at("hidden_data_offset"),
                at("hidden_data_offset") + at("hidden_data_size"),
            );
            regions.push(("outer free space", data, hs));
            regions.push(("hidden area", hs, he));
            regions.push(("reserved area after the hidden data", he, data_end));
        }
    }
    regions.push(("backup header group", data_end, bytes.len()));
    (bytes, regions)
}

/// The first failure of `check_random` over the regions, or `Ok`.
fn check_regions(bytes: &[u8], regions: &[(&str, usize, usize)]) -> Result<(), String> {
    regions
        .iter()
        .try_for_each(|&(name, s, e)| check_random(name, s, &bytes[s..e]))
}

#[test]
fn w15_raw_container_bytes_are_indistinguishable_from_random() {
    for (tag, hidden) in [("raw-plain", None), ("raw-hidden", Some(1u64 << 20))] {
        let (bytes, regions) = create_raw(tag, 4 << 20, hidden, "");
        assert_eq!(regions.len(), if hidden.is_some() { 5 } else { 3 });
        for (name, s, e) in &regions {
            assert!(e - s >= 4096, "{name}: {s}..{e}");
        }
        if let Err(e) = check_regions(&bytes, &regions) {
            panic!("{tag}: {e}");
        }
    }
}

#[test]
fn w15_raw_fill_check_fails_on_zeros_constants_and_repeats() {
    // Each way a fill can give itself away, on bytes made here, with its own message.
    let mut random = vec![0u8; 64 << 10];
    getrandom::fill(&mut random).unwrap();
    assert_eq!(check_random("sample", 0, &random), Ok(()));
    let mut zeros = random.clone();
    zeros[4096..4608].fill(0);
    let e = check_random("sample", 0, &zeros).unwrap_err();
    assert!(
        e.contains("1 of 128 sectors are all zeros (the first at byte 4096)"),
        "{e}"
    );
    let e = check_random("sample", 0, &vec![0x5a; 64 << 10]).unwrap_err();
    assert!(
        e.contains("the sector at byte 512 repeats the one at byte 0"),
        "{e}"
    );
    // Distinct sectors, but only half the byte values: the histogram gives it away.
    let halved: Vec<u8> = random.iter().map(|b| b & 0x7f).collect();
    let e = check_random("sample", 0, &halved).unwrap_err();
    assert!(e.contains("byte histogram chi-square"), "{e}");
}

#[test]
fn w15_raw_fill_check_catches_a_create_whose_fill_writes_zeros() {
    // The fault switch makes `create` write plain zeros as the fill; with a hidden volume and
    // without, the check names the fill's regions (the header groups stay random).
    for (tag, hidden, first) in [
        (
            "raw-zero-plain",
            None,
            "raw free space (the whole data area)",
        ),
        ("raw-zero-hidden", Some(1u64 << 20), "raw outer free space"),
    ] {
        let (bytes, regions) = create_raw(tag, 4 << 20, hidden, "fill-writes-zeros");
        let e = check_regions(&bytes, &regions).unwrap_err();
        assert!(e.starts_with(first), "{tag}: {e}");
        assert!(e.contains("sectors are all zeros"), "{tag}: {e}");
        for &(name, s, e) in &regions {
            let r = check_random(name, s, &bytes[s..e]);
            assert_eq!(
                r.is_ok(),
                name.contains("header group"),
                "{tag}: {name}: {r:?}"
            );
        }
    }
}
