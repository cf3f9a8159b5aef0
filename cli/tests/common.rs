//! Helpers shared by the vcctl integration tests.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// A fresh path in the temp dir, removed when dropped.
pub struct TempPath(pub PathBuf);

impl TempPath {
    pub fn new(tag: &str) -> TempPath {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        TempPath(std::env::temp_dir().join(format!("vcctl-test-{}-{n}-{tag}", std::process::id())))
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs vcctl with `args` and `stdin`.
pub fn vcctl(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vcctl"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vcctl runs");
    let written = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes());
    // vcctl may end before it reads all of stdin (an error found first): its output and status
    // are what the test checks; any other write failure is the harness's.
    if let Err(e) = written {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
    }
    child.wait_with_output().expect("vcctl finishes")
}

/// Asserts a success and returns stdout.
pub fn ok(out: Output) -> Vec<u8> {
    assert!(
        out.status.success(),
        "vcctl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Asserts exit code 2 with exactly one line on stderr, no panic; returns the line.
pub fn fails(out: Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(2),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.stdout.is_empty());
    err
}

/// Parses inspect's JSON.
pub fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).expect("inspect prints JSON")
}

/// The volumes VeraCrypt wrote for these tests (in the repository: tests/data/veracrypt-written).
pub fn written(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/veracrypt-written")
        .join(name)
}

/// Chi-square statistic (255 degrees of freedom) of the byte histogram against uniform bytes.
pub fn chi_square(data: &[u8]) -> f64 {
    let mut counts = [0u64; 256];
    for b in data {
        counts[*b as usize] += 1;
    }
    let expect = data.len() as f64 / 256.0;
    counts
        .iter()
        .map(|c| (*c as f64 - expect).powi(2) / expect)
        .sum()
}
