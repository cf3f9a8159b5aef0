//! An open that tries several PRFs says on stderr which PRF it is trying once it has run for
//! 1.5 s, as VeraCrypt shows its progress; nothing with `--quiet`. The clock is the test seam
//! `VCCTL_PRF_NOTICE_AFTER_MS` of a test build (`vcctl::faults::prf_notice_after`): 0 makes
//! every open "slow".

mod common;
use common::*;

use std::process::{Command, Output, Stdio};

/// Runs vcctl with `args`, `stdin` and the notice time `after_ms` (None: vcctl's own).
fn vcctl_after(args: &[&str], stdin: &str, after_ms: Option<u64>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vcctl"));
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match after_ms {
        Some(ms) => cmd.env("VCCTL_PRF_NOTICE_AFTER_MS", ms.to_string()),
        None => cmd.env_remove("VCCTL_PRF_NOTICE_AFTER_MS"),
    };
    let mut child = cmd.spawn().expect("vcctl runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().expect("vcctl finishes")
}

fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_slow_open_names_the_prfs_it_tries_on_stderr_and_nothing_with_quiet() {
    let f = TempPath::new("notice");
    let path = f.0.to_str().unwrap();
    ok(vcctl(
        &[
            "volume",
            "create",
            path,
            "--password-stdin",
            "--size",
            "524288",
            "--prf",
            "sha256",
            "--pim",
            "1",
            "--quiet",
        ],
        "pw\n",
    ));
    let inspect = ["volume", "inspect", path, "--password-stdin", "--pim", "1"];
    let read = [
        "volume",
        "read",
        path,
        "--password-stdin",
        "--pim",
        "1",
        "--offset",
        "0",
        "--length",
        "512",
    ];
    for args in [&inspect[..], &read[..]] {
        // "Slow": SHA-256 is named (it is always started: second in VeraCrypt's order, with
        // at least two PRFs derived at once), every line names a PRF, and stdout is as always.
        let out = vcctl_after(args, "pw\n", Some(0));
        assert!(out.status.success(), "{out:?}");
        let lines = stderr_lines(&out);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("vcctl: trying PRF sha256 on the primary header, AES (")),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with("vcctl: trying PRF ") && l.ends_with(" s so far)")),
            "{lines:?}"
        );
        let plain = ok(vcctl_after(args, "pw\n", None));
        assert_eq!(out.stdout.len(), plain.len());
        // --quiet: nothing on stderr, however slow.
        let mut quiet = args.to_vec();
        quiet.push("--quiet");
        let out = vcctl_after(&quiet, "pw\n", Some(0));
        assert!(out.status.success(), "{out:?}");
        assert!(out.stderr.is_empty(), "{:?}", stderr_lines(&out));
        // One PRF given: nothing to name.
        let mut one = args.to_vec();
        one.extend_from_slice(&["--prf", "sha256"]);
        let out = vcctl_after(&one, "pw\n", Some(0));
        assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
    }
    // A failed open names them all (both header copies, AES then the other ciphers), then
    // fails with its one error line, last.
    let out = vcctl_after(&inspect, "wrong\n", Some(0));
    assert_eq!(out.status.code(), Some(2));
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 4 * 6 + 1, "{lines:?}");
    assert!(lines[24].starts_with("vcctl: wrong password"), "{lines:?}");
    for prf in [
        "sha512",
        "sha256",
        "blake2s",
        "whirlpool",
        "streebog",
        "argon2",
    ] {
        let n = lines
            .iter()
            .filter(|l| l.starts_with(&format!("vcctl: trying PRF {prf} on ")))
            .count();
        assert_eq!(n, 4, "{prf}: {lines:?}");
    }
    // With vcctl's own notice time (1.5 s), a quick open says nothing.
    let out = vcctl_after(&inspect, "pw\n", None);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
}
