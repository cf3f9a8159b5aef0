//! Test helper, never shipped: prints the master key area (hex; 64 bytes for AES) of a
//! volume, so the Wine end to end's W5 memory check (scripts/w5-wine-key-bytes.py) knows which
//! bytes to look for in the driver's process. The password is the first line of standard
//! input, as `vcctl --password-stdin` reads it. Built only with vcctl's feature `wine-e2e`
//! (`cargo build -p vcctl --features wine-e2e --example master_key`).
//!
//! Usage: master_key VOLUME PRF PIM < password

use std::path::Path;
use std::process::ExitCode;

use vcctl::kdf::Prf;
use vcctl::secret::stdin_lines;
use vcctl::volume::{open, Credentials, Kind};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [volume, prf, pim] = args.as_slice() else {
        eprintln!("usage: master_key VOLUME PRF PIM < password");
        return ExitCode::from(2);
    };
    let (Some(prf), Ok(pim)) = (Prf::from_name(prf), pim.parse::<u32>()) else {
        eprintln!("master_key: unknown PRF {prf} or bad PIM {pim}");
        return ExitCode::from(2);
    };
    let password = match stdin_lines(1) {
        Ok(mut lines) if lines.len() == 1 => lines.remove(0),
        _ => {
            eprintln!("master_key: cannot read the password from standard input");
            return ExitCode::from(2);
        }
    };
    let creds = Credentials {
        password,
        prf: Some(prf),
        pim,
        keyfiles: Vec::new(),
    };
    match open(Path::new(volume), &creds, Kind::Normal) {
        Ok(opened) => {
            // The key area the volume's algorithm uses (64 bytes for AES).
            let key = opened.key_area();
            let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
            println!("{hex}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("master_key: {e}");
            ExitCode::FAILURE
        }
    }
}
