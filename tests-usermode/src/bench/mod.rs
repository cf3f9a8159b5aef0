//! `vcbench`: DiskSpd-style measurements of the host devices and (once plugged in) the engine.
//!
//! Owns: the command line, the interleaved rounds (every mode of a profile runs once per round,
//! so each ratio is taken between runs close in time), and the reports.
//! Never: builds engine volumes itself; an [`EngineFactory`] supplies the `legacy` and
//! `direct` targets (docs/design.md §6).

pub mod crypto;
pub mod engine;
pub mod load;
pub mod lock;
pub mod pool;
pub mod report;
pub mod target;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use vcdirect::platform::HostDevice;

pub use load::{builtin_profile, builtin_profiles, run_profile, Class, Profile, RunResult, Timing};
pub use report::RunRecord;
pub use target::{
    no_engine, run_all, target_for, CompletionQueue, Done, EngineFactory, Mode, Op, RawTarget,
    Target,
};

use crate::host::{parse_size, FileHost, FileOptions, StdHost};

/// The usage text.
pub const USAGE: &str = "\
vcbench: DiskSpd-style benchmark of vcdirect's hosts and engine

usage:
  vcbench crypto [--json PATH]
  vcbench lock
  vcbench pool
  vcbench [-b SIZE] [-o N] [-t N] [-r] [-w PCT] [-d SECS] [-W SECS] [-Sh] [-L]
          [--host file:PATH|model:nvme[,lat_us=80,gbps=3.5,channels=32,max-transfer=128K]|memory:SIZE]
          [--file PATH] [--size BYTES] [--mode raw,raw-qd8,legacy,direct] [--pairs N]
          [--profile NAME]... [--json PATH] [--chart PATH.svg]

profiles: seq-read, seq-write, rand-read, rand-write, mixed-70-30, seqwrite-randread (DiskSpd),
  seq1m-q8t1, seq1m-q1t1, rnd4k-q32t1, rnd4k-q1t1 (CrystalDiskMark's read profiles)
  (default: all ten; -b/-o/-t/-r/-w without --profile define one custom profile)
each -t thread keeps its -o I/Os in flight (no thread per I/O); every run reports the process's
CPU time per operation (user + system); Q1T1 profiles also the latency the engine adds.
without --host or --file: a temporary file of --size (default 1G) in the current directory,
removed afterwards. File hosts always use O_DIRECT where the file system allows it (-Sh).";

/// Parsed command line of the main benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Custom class parameters (`-b -o -t -r -w`), if any was given.
    pub custom: Option<Class>,
    /// `--profile` names.
    pub profiles: Vec<String>,
    /// `-d` and `-W`.
    pub duration: f64,
    /// Warm-up seconds.
    pub warmup: f64,
    /// `-L`.
    pub latency: bool,
    /// `--host` spec.
    pub host: Option<String>,
    /// `--size`.
    pub size: u64,
    /// `--mode`.
    pub modes: Vec<Mode>,
    /// `--pairs` (rounds).
    pub pairs: usize,
    /// `--json`.
    pub json: Option<PathBuf>,
    /// `--chart`.
    pub chart: Option<PathBuf>,
}

fn num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{flag}: {v:?} is not a valid number"))
}

/// Parses the main benchmark's arguments (DiskSpd style: `-b4K` or `-b 4K`).
pub fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        custom: None,
        profiles: Vec::new(),
        duration: 5.0,
        warmup: 1.0,
        latency: false,
        host: None,
        size: 1 << 30,
        modes: Mode::DEFAULT.to_vec(),
        pairs: 3,
        json: None,
        chart: None,
    };
    let mut c = Class {
        name: "custom".into(),
        block: 64 * 1024,
        outstanding: 2,
        threads: 1,
        random: false,
        write_pct: 0,
    };
    let mut custom = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let mut value = |name: &str| -> Result<String, String> {
            if a.len() > name.len() && !a.starts_with("--") {
                return Ok(a[name.len()..].to_string());
            }
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match a {
            _ if a.starts_with("-b") => {
                c.block = parse_size(&value("-b")?).map_err(|e| format!("-b: {e}"))? as usize;
                custom = true;
            }
            _ if a.starts_with("-o") => {
                c.outstanding = num("-o", &value("-o")?)?;
                custom = true;
            }
            _ if a.starts_with("-t") => {
                c.threads = num("-t", &value("-t")?)?;
                custom = true;
            }
            _ if a.starts_with("-w") => {
                c.write_pct = num("-w", &value("-w")?)?;
                custom = true;
            }
            _ if a.starts_with("-r") && !a.starts_with("--") => {
                c.random = true;
                custom = true;
            }
            _ if a.starts_with("-d") && !a.starts_with("--") => {
                o.duration = num("-d", &value("-d")?)?
            }
            _ if a.starts_with("-W") => o.warmup = num("-W", &value("-W")?)?,
            _ if a.starts_with("-S") => {}
            "-L" => o.latency = true,
            "--host" => o.host = Some(value("--host")?),
            "--file" => o.host = Some(format!("file:{}", value("--file")?)),
            "--size" => {
                o.size = parse_size(&value("--size")?).map_err(|e| format!("--size: {e}"))?
            }
            "--mode" => {
                o.modes = value("--mode")?
                    .split(',')
                    .map(|m| {
                        Mode::parse(m.trim()).ok_or_else(|| {
                            format!("unknown mode {m:?} (raw, raw-qd8, legacy, direct)")
                        })
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--pairs" => o.pairs = num("--pairs", &value("--pairs")?)?,
            "--profile" => {
                let p = value("--profile")?;
                if builtin_profile(&p).is_none() {
                    return Err(format!("unknown profile {p:?}"));
                }
                o.profiles.push(p);
            }
            "--json" => o.json = Some(PathBuf::from(value("--json")?)),
            "--chart" => o.chart = Some(PathBuf::from(value("--chart")?)),
            other => return Err(format!("unknown argument {other:?}")),
        }
        i += 1;
    }
    if custom && !o.profiles.is_empty() {
        return Err("use either --profile or -b/-o/-t/-r/-w (a custom profile), not both".into());
    }
    if !(o.duration > 0.0 && o.duration.is_finite() && o.warmup >= 0.0 && o.warmup.is_finite()) {
        return Err("-d must be positive and -W not negative".into());
    }
    if c.write_pct > 100
        || c.threads == 0
        || c.outstanding == 0
        || c.block == 0
        || !c.block.is_multiple_of(512)
    {
        return Err(
            "-b must be a non-zero multiple of 512, -o and -t at least 1, -w at most 100".into(),
        );
    }
    if o.pairs == 0 || o.modes.is_empty() {
        return Err("--pairs and --mode need at least one".into());
    }
    if custom {
        o.custom = Some(c);
    }
    Ok(o)
}

/// CPU model name from /proc/cpuinfo.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The file system type and mount point holding `path`, from /proc/self/mountinfo (the
/// longest mount point that is a prefix of the canonical path).
fn file_system_of(path: &Path) -> Option<(String, String)> {
    let path = std::fs::canonicalize(path).ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split(' ').collect();
            let mount = *fields.get(4)?;
            let dash = fields.iter().position(|f| *f == "-")?;
            let fstype = *fields.get(dash + 1)?;
            path.starts_with(mount)
                .then(|| (mount.to_string(), fstype.to_string()))
        })
        .max_by_key(|(m, _)| m.len())
        .map(|(m, t)| (t, m))
}

/// Mean latency of the model at queue depth 1 (4 KiB reads), in microseconds.
fn qd1_mean_us(host: &StdHost, ops: u32) -> f64 {
    let mut buf = crate::request::Buf::zeroed_aligned(4096, 4096);
    let t = Instant::now();
    for i in 0..ops {
        let _ = host.read(
            (u64::from(i) * 4096) % host.size().max(4096),
            buf.as_mut_slice(),
        );
    }
    t.elapsed().as_secs_f64() * 1e6 / f64::from(ops)
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Removes the temporary file when dropped.
struct TempFile(Option<PathBuf>);
impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Runs the main benchmark with `engine` supplying the engine modes. Returns the JSON report.
pub fn run_bench(o: &Options, engine: EngineFactory) -> Result<Value, String> {
    let spec = o
        .host
        .clone()
        .unwrap_or_else(|| format!("file:vcbench-{}.dat", std::process::id()));
    let mut temp = TempFile(None);
    let host = if let Some(path) = spec.strip_prefix("file:") {
        let path = path.trim_end_matches(",kind=raw");
        if Path::new(path).exists() {
            StdHost::from_spec(&spec, o.size).map_err(|e| e.to_string())?
        } else {
            eprintln!("creating {path} ({} bytes)...", o.size);
            temp.0 = Some(PathBuf::from(path));
            let h = FileHost::create(path, o.size, &FileOptions::default())
                .map_err(|e| format!("cannot create {path}: {e}"))?;
            StdHost::File(h)
        }
    } else {
        StdHost::from_spec(&spec, o.size).map_err(|e| e.to_string())?
    };
    let host = Arc::new(host);

    let mut machine = json!({
        "cpu": cpu_model(),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "os": std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| format!("Linux {}", s.trim())).unwrap_or_default(),
        "file_system": Value::Null, "mount_point": Value::Null, "o_direct": Value::Null,
    });
    let mut host_json = json!({"spec": spec, "size": host.size(), "description": host.describe()});
    match host.as_ref() {
        StdHost::File(f) => {
            if let Some((fs, mount)) = file_system_of(f.path()) {
                machine["file_system"] = json!(fs);
                machine["mount_point"] = json!(mount);
            }
            machine["o_direct"] = json!(f.o_direct());
            host_json["kind"] = json!("file");
            host_json["o_direct_message"] = json!(f.direct_message());
            println!("host: {} ({})", f.path().display(), f.direct_message());
        }
        StdHost::Model(m) => {
            let measured = qd1_mean_us(&host, 2000);
            let p = m.params();
            host_json["kind"] = json!("model");
            host_json["label"] = json!("model, not hardware");
            host_json["params"] = json!({"preset": p.preset, "lat_us": p.latency.as_secs_f64() * 1e6,
                                         "gbps": p.bytes_per_sec / 1e9, "channels": p.channels,
                                         "max_transfer": p.max_transfer});
            host_json["measured_qd1_mean_latency_us"] = json!(measured);
            println!(
                "host: {} -- MODEL, NOT HARDWARE; mean latency at QD1 (4 KiB reads): measured {measured:.1} us, configured {:.1} us",
                p,
                p.latency.as_secs_f64() * 1e6
            );
        }
        StdHost::Memory(_) => {
            host_json["kind"] = json!("memory");
            println!("host: {}", host.describe());
        }
    }

    let profiles: Vec<Profile> = match &o.custom {
        Some(c) => vec![Profile {
            name: "custom".into(),
            classes: vec![c.clone()],
        }],
        None if o.profiles.is_empty() => builtin_profiles(),
        None => o
            .profiles
            .iter()
            .filter_map(|p| builtin_profile(p))
            .collect(),
    };
    let mut targets: Vec<(Mode, Box<dyn Target>)> = Vec::new();
    for &mode in &o.modes {
        match target_for(mode, &host, engine) {
            Some(t) => targets.push((mode, t)),
            None => println!(
                "mode {}: not available yet (the engine is not plugged into vcbench); skipped",
                mode.name()
            ),
        }
    }
    if targets.is_empty() {
        return Err("no mode can run".into());
    }
    let timing = Timing {
        warmup: Duration::from_secs_f64(o.warmup),
        duration: Duration::from_secs_f64(o.duration),
    };
    let mut runs = Vec::new();
    for round in 0..o.pairs {
        for p in &profiles {
            for (mode, target) in &targets {
                let label = format!(
                    "[round {}/{}] {} {}",
                    round + 1,
                    o.pairs,
                    p.name,
                    mode.name()
                );
                let result = run_profile(target.as_ref(), p, timing, &label)?;
                eprintln!(
                    "{label}: {:.0} IOPS, {:.1} MiB/s{}",
                    result.iops(),
                    result.mib_per_s(),
                    if result.errors > 0 {
                        format!(
                            ", {} ERRORS (first {:?})",
                            result.errors, result.first_error
                        )
                    } else {
                        String::new()
                    }
                );
                runs.push(RunRecord {
                    round,
                    profile: p.name.clone(),
                    mode: *mode,
                    result,
                    counters: target.counters(),
                });
            }
        }
    }
    let names: Vec<String> = profiles.iter().map(|p| p.name.clone()).collect();
    let mut summary = report::summarize(&names, &runs);
    for (s, p) in summary.iter_mut().zip(&profiles) {
        s.lone = p.is_lone();
    }
    println!();
    if let StdHost::Model(_) = host.as_ref() {
        println!("MODEL RESULTS (model, not hardware):");
    }
    print!("{}", report::table(&summary, &runs, o.latency));
    let params = json!({"duration_s": o.duration, "warmup_s": o.warmup, "pairs": o.pairs,
        "modes": o.modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
        "profiles": profiles.iter().map(|p| json!({"name": p.name, "classes": p.classes.iter().map(|c| json!({
            "name": c.name, "block": c.block, "outstanding": c.outstanding, "threads": c.threads,
            "random": c.random, "write_pct": c.write_pct})).collect::<Vec<_>>()})).collect::<Vec<_>>()});
    let mut summary_json = report::summary_json(&summary);
    engine::add_volume_memory(&mut summary_json);
    let report = json!({"tool": "vcbench", "summary": summary_json, "runs": report::runs_json(&runs),
        "machine": machine, "host": host_json, "params": params});
    if let Some(path) = &o.json {
        write_file(
            path,
            &serde_json::to_string_pretty(&report).unwrap_or_default(),
        )?;
        println!("JSON: {}", path.display());
    }
    if let Some(path) = &o.chart {
        let title = format!("vcbench on {}", host.describe());
        write_file(path, &report::svg_chart(&summary, &title))?;
        println!("chart: {}", path.display());
    }
    Ok(report)
}

/// The whole tool: `args` without the program name. Returns the exit code.
pub fn main_with(args: &[String], engine: EngineFactory) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help" || a == "-?") {
        println!("{USAGE}");
        return 0;
    }
    if args.first().map(String::as_str) == Some("lock") {
        lock::run();
        return 0;
    }
    if args.first().map(String::as_str) == Some("pool") {
        pool::run();
        return 0;
    }
    if args.first().map(String::as_str) == Some("crypto") {
        let json_path = match args.get(1..) {
            Some([]) | None => None,
            Some([flag, path]) if flag == "--json" => Some(PathBuf::from(path)),
            Some(other) => {
                eprintln!("vcbench crypto: unexpected arguments {other:?}\n\n{USAGE}");
                return 2;
            }
        };
        let j = crypto::run();
        if let Some(p) = json_path {
            if let Err(e) = write_file(&p, &serde_json::to_string_pretty(&j).unwrap_or_default()) {
                eprintln!("vcbench: {e}");
                return 1;
            }
        }
        return 0;
    }
    let o = match parse_options(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("vcbench: {e}\n\n{USAGE}");
            return 2;
        }
    };
    match run_bench(&o, engine) {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("vcbench: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn diskspd_style_arguments_parse_attached_or_separate() {
        let o = parse_options(&args(
            "-b4K -o 32 -t4 -r -w30 -d2 -W0 -Sh -L --host model:nvme --mode raw,raw-qd8 --pairs 2",
        ))
        .unwrap();
        let c = o.custom.unwrap();
        assert_eq!(
            (c.block, c.outstanding, c.threads, c.random, c.write_pct),
            (4096, 32, 4, true, 30)
        );
        assert_eq!(
            (o.duration, o.warmup, o.latency, o.pairs),
            (2.0, 0.0, true, 2)
        );
        assert_eq!(o.modes, vec![Mode::Raw, Mode::RawQd8]);
        let o = parse_options(&args(
            "--profile seq-read --profile rand-read --file x.dat --size 64M",
        ))
        .unwrap();
        assert_eq!(o.profiles, ["seq-read", "rand-read"]);
        assert_eq!(o.host.as_deref(), Some("file:x.dat"));
        assert_eq!(o.size, 64 << 20);
        assert!(o.custom.is_none());
    }

    #[test]
    fn bad_arguments_are_clear_errors() {
        for bad in [
            "-b",
            "-b 1000",
            "-o0",
            "-w101",
            "--mode fast",
            "--profile nope",
            "--pairs 0",
            "-d0",
            "-x",
            "--profile seq-read -b4K",
            "-o x",
        ] {
            let e = parse_options(&args(bad))
                .err()
                .unwrap_or_else(|| panic!("{bad} accepted"));
            assert!(!e.is_empty());
        }
    }

    #[test]
    fn a_short_model_run_reports_raw_modes_and_skips_engine_modes() {
        let o = parse_options(&args(
            "--host model:nvme,size=16M --profile rand-read -d0.2 -W0 --pairs 2",
        ))
        .unwrap();
        let j = run_bench(&o, no_engine).unwrap();
        let s = &j["summary"][0];
        assert_eq!(s["profile"], "rand-read");
        assert!(s["median"]["raw"]["iops"].as_f64().unwrap() > 0.0);
        assert!(s["median"]["raw_qd8"]["read_p99_us"].is_number());
        assert!(s["median"]["raw"]["write_p99_us"].is_null());
        assert!(s["median"]["raw"]["volume_memory_bytes"].is_null());
        assert!(s["median"]["direct"].is_null() && s["ratio_direct_raw"].is_null());
        assert_eq!(j["runs"].as_array().unwrap().len(), 4);
        assert_eq!(j["host"]["label"], "model, not hardware");
        assert!(j["host"]["measured_qd1_mean_latency_us"].as_f64().unwrap() >= 80.0);
    }

    #[test]
    fn raw_modes_split_requests_at_the_model_hosts_maximum_transfer() {
        let o = parse_options(&args(
            "--host model:nvme,size=16M,max-transfer=128K --profile seq1m-q1t1 -d0.2 -W0 --pairs 1",
        ))
        .unwrap();
        let j = run_bench(&o, no_engine).unwrap();
        assert_eq!(j["host"]["params"]["max_transfer"], 128 * 1024);
        for run in j["runs"].as_array().unwrap() {
            assert_eq!(run["errors"], 0, "{run}");
            assert!(run["iops"].as_f64().unwrap() > 0.0, "{run}");
            assert!(run["cpu_us_per_op"].is_number(), "{run}");
        }
        assert_eq!(j["summary"][0]["one_request_in_flight"], true);
    }

    #[test]
    fn engine_modes_report_the_volume_memory_they_mounted() {
        let o = parse_options(&args(
            "--host model:nvme,size=16M --profile seq-write -d0.1 -W0 --pairs 1 --mode legacy,direct",
        ))
        .unwrap();
        let j = run_bench(&o, engine::engine_factory).unwrap();
        let m = &j["summary"][0]["median"];
        let legacy = m["legacy"]["volume_memory_bytes"].as_u64().unwrap();
        let direct = m["direct"]["volume_memory_bytes"].as_u64().unwrap();
        // The direct volume holds the legacy buffers plus its 8 write bounce buffers.
        assert!(legacy > 0 && direct > legacy, "{legacy} {direct}");
    }
}
