//! Time to open a VeraCrypt volume with PIM 0 and HMAC-SHA-512 (500,000 iterations), next to
//! the `pbkdf2` crate's own time for the same derivation. Run with
//! `cargo run --release -p vcctl --example open_speed -- VOLUME PASSWORD`.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use vcctl::kdf::{self, Prf};
use vcctl::volume::{self, Credentials, Kind};
use zeroize::Zeroizing;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(pw)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: open_speed VOLUME PASSWORD");
        std::process::exit(2);
    };
    let salt = [7u8; 64];
    let runs = 5;
    let mut crate_t = Vec::new();
    let mut ours_t = Vec::new();
    let mut open_t = Vec::new();
    let mut open_all_t = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let mut out = [0u8; 64];
        pbkdf2::pbkdf2_hmac::<sha2::Sha512>(pw.as_bytes(), &salt, 500_000, &mut out);
        crate_t.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let mut ours = [0u8; 64];
        kdf::derive(
            Prf::Sha512,
            pw.as_bytes(),
            &salt,
            500_000,
            &mut ours,
            &AtomicBool::new(false),
        )
        .expect("not cancelled");
        ours_t.push(t.elapsed().as_secs_f64());
        assert_eq!(out, ours);
        for (prf, times) in [(Some(Prf::Sha512), &mut open_t), (None, &mut open_all_t)] {
            let creds = Credentials {
                password: Zeroizing::new(pw.as_bytes().to_vec()),
                prf,
                pim: 0,
                keyfiles: Vec::new(),
            };
            let t = Instant::now();
            volume::open(path.as_ref(), &creds, Kind::Normal).expect("volume opens");
            times.push(t.elapsed().as_secs_f64());
        }
    }
    println!(
        "pbkdf2 crate, HMAC-SHA-512 x 500000, 64 bytes: {:.3} s (median of {runs})",
        median(crate_t)
    );
    println!(
        "vcctl kdf::derive, same:                       {:.3} s",
        median(ours_t)
    );
    println!(
        "vcctl open, --prf sha512, PIM 0:               {:.3} s",
        median(open_t)
    );
    println!(
        "vcctl open, all PRFs in parallel, PIM 0:       {:.3} s",
        median(open_all_t)
    );
}
