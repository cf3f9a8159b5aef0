//! vcsim: seeded simulation of whole volumes with an adversarial disk.
//!
//! `vcsim --seeds A..B [--ops N] [--config NAME | --all-configs]` runs seeds A (inclusive) to
//! B (exclusive); each seed runs on one of the four standard volume configurations (gates off,
//! read-only, write-only, both on), chosen by the seed, unless `--config` names one or
//! `--all-configs` runs every seed on all four. `--filesystem-above` runs instead the W1
//! dismount with a filesystem stand-in above the volume (one case per seed). `VCSIM_SEED=n
//! vcsim` replays one seed. On a violation it prints the seed, what broke, and the replay
//! command, and exits 1.

use std::time::Instant;

use vcdirect_usermode::sim::{run_fs_seed, run_seed, SimConfig};

fn usage() -> ! {
    eprintln!("usage: vcsim [--seeds A..B] [--ops N] [--config gates-off|read-only|write-only|both-on | --all-configs] [--fault r1|r2|r3|r12|r12-overtake|r13|w9|flush|r3-leak|r3-unwiped] [--filesystem-above]");
    std::process::exit(2);
}

fn main() {
    let mut seeds = 0u64..100;
    let mut ops = 500usize;
    let mut only: Option<String> = None;
    let mut fault: Option<String> = None;
    let mut all_configs = false;
    let mut filesystem_above = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--seeds" => {
                let v = val();
                let (a, b) = v.split_once("..").unwrap_or_else(|| usage());
                seeds =
                    a.parse().unwrap_or_else(|_| usage())..b.parse().unwrap_or_else(|_| usage());
            }
            "--ops" => ops = val().parse().unwrap_or_else(|_| usage()),
            "--config" => only = Some(val()),
            "--fault" => fault = Some(val()),
            "--all-configs" => all_configs = true,
            "--filesystem-above" => filesystem_above = true,
            _ => usage(),
        }
    }
    if let Ok(s) = std::env::var("VCSIM_SEED") {
        let s: u64 = s.parse().unwrap_or_else(|_| usage());
        seeds = s..s.saturating_add(1);
    }
    if let Some(f) = &fault {
        vcdirect_usermode::sim::set_fault(f).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2)
        });
    }
    if filesystem_above {
        run_filesystem_above(seeds);
        return;
    }
    let configs: Vec<SimConfig> = SimConfig::standard(ops)
        .into_iter()
        .filter(|c| only.as_deref().is_none_or(|o| o == c.name))
        .collect();
    if configs.is_empty() {
        usage();
    }
    // Panics inside a seed are reported as violations with the seed; keep stderr quiet.
    std::panic::set_hook(Box::new(|_| {}));
    let start = Instant::now();
    let mut runs = 0u64;
    let mut requests = 0usize;
    let mut carried = 0u64;
    for seed in seeds.clone() {
        let chosen: Vec<&SimConfig> = if all_configs || only.is_some() {
            configs.iter().collect()
        } else {
            vec![&configs[(seed % configs.len() as u64) as usize]]
        };
        for cfg in chosen {
            let r = run_seed(cfg, seed);
            runs += 1;
            requests += r.requests;
            carried += r.carried;
            if std::env::var("VCSIM_SEED").is_ok() {
                println!(
                    "seed {seed} config {}: trace {:016x}, {} requests, {}",
                    cfg.name, r.trace_hash, r.requests, r.drawn
                );
            }
            if !r.violations.is_empty() {
                println!("FAIL seed {seed} config {} ({})", cfg.name, r.drawn);
                for v in &r.violations {
                    println!("  - {v}");
                }
                let fault_arg = fault
                    .as_deref()
                    .map(|f| format!(" --fault {f}"))
                    .unwrap_or_default();
                println!(
                    "replay: VCSIM_SEED={seed} cargo run --release -p vcdirect-usermode --bin vcsim -- --config {} --ops {ops}{fault_arg}",
                    cfg.name
                );
                std::process::exit(1);
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "vcsim: {} seeds, {runs} runs, {requests} requests ({carried} issued with carried permits), {:.1} s ({:.1} runs/s), no violation",
        seeds.end - seeds.start,
        secs,
        runs as f64 / secs
    );
}

/// `--filesystem-above`: the W1 dismount against a filesystem stand-in, one case per seed.
fn run_filesystem_above(seeds: std::ops::Range<u64>) {
    std::panic::set_hook(Box::new(|_| {}));
    let start = Instant::now();
    let mut writes = 0usize;
    for seed in seeds.clone() {
        let r = run_fs_seed(seed);
        writes += r.requests;
        if std::env::var("VCSIM_SEED").is_ok() {
            println!(
                "seed {seed} filesystem-above: trace {:016x}, {} filesystem writes, {}",
                r.trace_hash, r.requests, r.drawn
            );
        }
        if !r.violations.is_empty() {
            println!("FAIL seed {seed} filesystem-above ({})", r.drawn);
            for v in &r.violations {
                println!("  - {v}");
            }
            println!(
                "replay: VCSIM_SEED={seed} cargo run --release -p vcdirect-usermode --bin vcsim -- --filesystem-above"
            );
            std::process::exit(1);
        }
    }
    println!(
        "vcsim --filesystem-above: {} seeds, {writes} filesystem writes, {:.1} s, no violation",
        seeds.end - seeds.start,
        start.elapsed().as_secs_f64()
    );
}
