//! Results of a benchmark: medians and paired ratios, the table, the JSON and the SVG chart.

use serde_json::{json, Value};

use super::load::{LatStats, RunResult};
use super::target::Mode;

/// One run as recorded.
#[derive(Clone, Debug)]
pub struct RunRecord {
    /// Round (0-based).
    pub round: usize,
    /// Profile name.
    pub profile: String,
    /// Mode.
    pub mode: Mode,
    /// Numbers.
    pub result: RunResult,
    /// Engine counters, when the target has any.
    pub counters: Option<Value>,
}

/// The median of `values` (None when empty).
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

fn p99(l: &LatStats) -> Option<f64> {
    (l.count > 0).then_some(l.p99_us)
}

/// Medians of one profile and mode over rounds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Medians {
    /// IOPS.
    pub iops: f64,
    /// MiB/s.
    pub mib_per_s: f64,
    /// Read p99 (None without reads).
    pub read_p99_us: Option<f64>,
    /// Write p99 (None without writes).
    pub write_p99_us: Option<f64>,
    /// CPU time of the whole process per operation, user + system (None without operations).
    pub cpu_us_per_op: Option<f64>,
    /// Mean latency of all operations (None without operations).
    pub mean_latency_us: Option<f64>,
    /// Voluntary context switches of the whole process per operation (None without
    /// operations).
    pub context_switches_per_op: Option<f64>,
    /// Involuntary context switches (preemptions) of the whole process per operation.
    pub preemptions_per_op: Option<f64>,
}

/// The summary of one profile.
#[derive(Clone, Debug, Default)]
pub struct ProfileSummary {
    /// Profile name.
    pub profile: String,
    /// Medians per mode run.
    pub modes: Vec<(Mode, Medians)>,
    /// Median over rounds of direct/legacy IOPS.
    pub ratio_direct_legacy: Option<f64>,
    /// Median over rounds of direct/raw IOPS.
    pub ratio_direct_raw: Option<f64>,
    /// Median over rounds of direct/raw-qd8 IOPS (same bound on operations in flight).
    pub ratio_direct_raw_same_qd: Option<f64>,
    /// Median over rounds of raw-qd8/raw IOPS.
    pub ratio_raw_qd8_raw: Option<f64>,
    /// Median over rounds of the direct path's mean latency minus raw's, in microseconds:
    /// the latency the engine adds (to a lone request in a Q1T1 profile).
    pub added_latency_direct_us: Option<f64>,
    /// The same for the legacy path.
    pub added_latency_legacy_us: Option<f64>,
    /// The same for the direct path with every request on its workers (`direct-workers`).
    pub added_latency_direct_workers_us: Option<f64>,
    /// The same for the direct path driven from System threads (`direct-system`).
    pub added_latency_direct_system_us: Option<f64>,
    /// One request in flight at a time (set by the caller; the table lists the added latency
    /// of these profiles).
    pub lone: bool,
}

impl ProfileSummary {
    /// The medians of `mode`, if it ran.
    pub fn get(&self, mode: Mode) -> Option<&Medians> {
        self.modes.iter().find(|(m, _)| *m == mode).map(|(_, v)| v)
    }
}

/// Summarises the runs of every profile, in the order given.
pub fn summarize(profiles: &[String], runs: &[RunRecord]) -> Vec<ProfileSummary> {
    let rounds = runs.iter().map(|r| r.round + 1).max().unwrap_or(0);
    profiles
        .iter()
        .map(|p| {
            let of = |mode: Mode| {
                runs.iter()
                    .filter(move |r| &r.profile == p && r.mode == mode)
            };
            let mut s = ProfileSummary {
                profile: p.clone(),
                ..ProfileSummary::default()
            };
            for mode in Mode::ALL {
                if of(mode).next().is_none() {
                    continue;
                }
                let pick = |f: &dyn Fn(&RunResult) -> Option<f64>| {
                    let mut v: Vec<f64> = of(mode).filter_map(|r| f(&r.result)).collect();
                    median(&mut v)
                };
                let m = Medians {
                    iops: pick(&|r| Some(r.iops())).unwrap_or(0.0),
                    mib_per_s: pick(&|r| Some(r.mib_per_s())).unwrap_or(0.0),
                    read_p99_us: pick(&|r| p99(&r.read_lat)),
                    write_p99_us: pick(&|r| p99(&r.write_lat)),
                    cpu_us_per_op: pick(&|r| r.cpu_us_per_op()),
                    mean_latency_us: pick(&|r| r.mean_latency_us()),
                    context_switches_per_op: pick(&|r| r.switches_per_op()),
                    preemptions_per_op: pick(&|r| r.preemptions_per_op()),
                };
                s.modes.push((mode, m));
            }
            // The median over rounds of `combine` applied to each round's runs of `a` and `b`.
            let per_round =
                |a: Mode,
                 b: Mode,
                 value: &dyn Fn(&RunResult) -> Option<f64>,
                 combine: &dyn Fn(f64, f64) -> Option<f64>| {
                    let mut v: Vec<f64> = (0..rounds)
                        .filter_map(|round| {
                            let get = |m: Mode| {
                                of(m)
                                    .find(|r| r.round == round)
                                    .and_then(|r| value(&r.result))
                            };
                            combine(get(a)?, get(b)?)
                        })
                        .collect();
                    median(&mut v)
                };
            let ratio = |a: Mode, b: Mode| {
                per_round(a, b, &|r| Some(r.iops()), &|x, y| (y > 0.0).then(|| x / y))
            };
            let added =
                |a: Mode| per_round(a, Mode::Raw, &|r| r.mean_latency_us(), &|x, y| Some(x - y));
            s.added_latency_direct_us = added(Mode::Direct);
            s.added_latency_legacy_us = added(Mode::Legacy);
            s.added_latency_direct_workers_us = added(Mode::DirectWorkers);
            s.added_latency_direct_system_us = added(Mode::DirectSystem);
            s.ratio_direct_legacy = ratio(Mode::Direct, Mode::Legacy);
            s.ratio_direct_raw = ratio(Mode::Direct, Mode::Raw);
            s.ratio_direct_raw_same_qd = ratio(Mode::Direct, Mode::RawQd8);
            s.ratio_raw_qd8_raw = ratio(Mode::RawQd8, Mode::Raw);
            s
        })
        .collect()
}

fn fmt_opt(v: Option<f64>, width: usize, prec: usize) -> String {
    match v {
        Some(x) => format!("{x:>width$.prec$}"),
        None => format!("{:>width$}", "-"),
    }
}

/// The table printed on stdout: medians per profile and mode (with the process's CPU time
/// per operation and the mean latency), the ratios, then the latency the engine adds to a lone
/// request.
pub fn table(summary: &[ProfileSummary], runs: &[RunRecord], latency: bool) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{:<18} {:<8} {:>10} {:>9} {:>10} {:>10} {:>10} {:>9} {:>8} {:>8}\n",
        "profile",
        "mode",
        "IOPS",
        "MiB/s",
        "rd p99 us",
        "wr p99 us",
        "mean us",
        "CPU us/op",
        "vcsw/op",
        "ivcsw/op"
    ));
    for s in summary {
        for (mode, m) in &s.modes {
            out.push_str(&format!(
                "{:<18} {:<8} {:>10.0} {:>9.1} {} {} {} {} {} {}\n",
                s.profile,
                mode.name(),
                m.iops,
                m.mib_per_s,
                fmt_opt(m.read_p99_us, 10, 1),
                fmt_opt(m.write_p99_us, 10, 1),
                fmt_opt(m.mean_latency_us, 10, 1),
                fmt_opt(m.cpu_us_per_op, 9, 1),
                fmt_opt(m.context_switches_per_op, 8, 2),
                fmt_opt(m.preemptions_per_op, 8, 2)
            ));
        }
    }
    out.push_str(&format!(
        "\n{:<18} {:>13} {:>10} {:>16} {:>12}   (median over rounds of per-round IOPS ratios)\n",
        "profile", "direct/legacy", "direct/raw", "direct/raw-qd8", "raw-qd8/raw"
    ));
    for s in summary {
        out.push_str(&format!(
            "{:<18} {} {} {} {}\n",
            s.profile,
            fmt_opt(s.ratio_direct_legacy, 13, 3),
            fmt_opt(s.ratio_direct_raw, 10, 3),
            fmt_opt(s.ratio_direct_raw_same_qd, 16, 3),
            fmt_opt(s.ratio_raw_qd8_raw, 12, 3)
        ));
    }
    if summary.iter().any(|s| s.lone) {
        out.push_str(&format!(
            "\n{:<18} {:>12} {:>15} {:>15}   (one request in flight; median over rounds of per-round differences of mean latency)\n",
            "profile", "raw mean us", "legacy-raw us", "direct-raw us"
        ));
        for s in summary.iter().filter(|s| s.lone) {
            out.push_str(&format!(
                "{:<18} {} {} {}\n",
                s.profile,
                fmt_opt(s.get(Mode::Raw).and_then(|m| m.mean_latency_us), 12, 1),
                fmt_opt(s.added_latency_legacy_us, 15, 1),
                fmt_opt(s.added_latency_direct_us, 15, 1)
            ));
        }
    }
    if latency {
        out.push_str(&format!(
            "\nlatency per run and class (us): {:<18} {:<8} {:<10} {:>5} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9}\n",
            "profile", "mode", "class", "op", "mean", "p50", "p90", "p99", "p99.9", "max"
        ));
        for r in runs {
            for c in &r.result.classes {
                for (op, l) in [("read", &c.read_lat), ("write", &c.write_lat)] {
                    if l.count == 0 {
                        continue;
                    }
                    out.push_str(&format!(
                        "round {:<2}                        {:<18} {:<8} {:<10} {:>5} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>9.1}\n",
                        r.round + 1,
                        r.profile,
                        r.mode.name(),
                        c.name,
                        op,
                        l.mean_us,
                        l.p50_us,
                        l.p90_us,
                        l.p99_us,
                        l.p999_us,
                        l.max_us
                    ));
                }
            }
        }
    }
    out
}

fn lat_json(l: &LatStats) -> Value {
    if l.count == 0 {
        return Value::Null;
    }
    json!({"count": l.count, "mean_us": l.mean_us, "p50_us": l.p50_us, "p90_us": l.p90_us,
           "p99_us": l.p99_us, "p999_us": l.p999_us, "max_us": l.max_us})
}

/// The `summary` array of the JSON.
pub fn summary_json(summary: &[ProfileSummary]) -> Value {
    Value::Array(
        summary
            .iter()
            .map(|s| {
                let mut median = serde_json::Map::new();
                for mode in Mode::ALL {
                    let v = match s.get(mode) {
                        Some(m) => json!({"iops": m.iops, "mib_per_s": m.mib_per_s,
                                          "read_p99_us": m.read_p99_us, "write_p99_us": m.write_p99_us,
                                          "mean_latency_us": m.mean_latency_us,
                                          "cpu_us_per_op": m.cpu_us_per_op,
                                          "context_switches_per_op": m.context_switches_per_op,
                                          "preemptions_per_op": m.preemptions_per_op}),
                        None => Value::Null,
                    };
                    median.insert(mode.key().into(), v);
                }
                json!({"profile": s.profile, "median": median,
                       "ratio_direct_legacy": s.ratio_direct_legacy,
                       "ratio_direct_raw": s.ratio_direct_raw,
                       "ratio_direct_raw_same_qd": s.ratio_direct_raw_same_qd,
                       "ratio_raw_qd8_raw": s.ratio_raw_qd8_raw,
                       "one_request_in_flight": s.lone,
                       "added_mean_latency_us": {"legacy": s.added_latency_legacy_us,
                                                 "direct": s.added_latency_direct_us,
                                                 "direct_workers": s.added_latency_direct_workers_us,
                                                 "direct_system": s.added_latency_direct_system_us}})
            })
            .collect(),
    )
}

/// The `runs` array of the JSON.
pub fn runs_json(runs: &[RunRecord]) -> Value {
    Value::Array(
        runs.iter()
            .map(|r| {
                let classes: Vec<Value> = r
                    .result
                    .classes
                    .iter()
                    .map(|c| json!({"class": c.name, "reads": c.reads, "writes": c.writes, "bytes": c.bytes,
                                    "read_latency": lat_json(&c.read_lat), "write_latency": lat_json(&c.write_lat)}))
                    .collect();
                json!({"round": r.round + 1, "profile": r.profile, "mode": r.mode.name(),
                       "seconds": r.result.seconds, "iops": r.result.iops(), "mib_per_s": r.result.mib_per_s(),
                       "read_latency": lat_json(&r.result.read_lat), "write_latency": lat_json(&r.result.write_lat),
                       "cpu_user_s": r.result.cpu_user_s, "cpu_system_s": r.result.cpu_system_s,
                       "cpu_us_per_op": r.result.cpu_us_per_op(),
                       "voluntary_switches": r.result.voluntary_switches,
                       "involuntary_switches": r.result.involuntary_switches,
                       "context_switches_per_op": r.result.switches_per_op(),
                       "errors": r.result.errors,
                       "first_error": r.result.first_error.map(|s| format!("{s:?} (0x{:08X})", s.ntstatus())),
                       "classes": classes, "counters": r.counters})
            })
            .collect(),
    )
}

fn color(mode: Mode) -> &'static str {
    match mode {
        Mode::Raw => "#4e79a7",
        Mode::RawQd8 => "#76b7b2",
        Mode::Legacy => "#e15759",
        Mode::Direct => "#59a14f",
        Mode::DirectWorkers => "#edc948",
        Mode::DirectSystem => "#b07aa1",
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A bar chart: throughput (MiB/s) per profile and mode, and read p99 latency. Bars of a
/// profile share a scale (its largest value), since profiles differ by orders of magnitude.
pub fn svg_chart(summary: &[ProfileSummary], title: &str) -> String {
    let modes: Vec<Mode> = Mode::ALL
        .into_iter()
        .filter(|m| summary.iter().any(|s| s.get(*m).is_some()))
        .collect();
    let group_w = 40.0 + 50.0 * modes.len().max(1) as f64;
    let width = 80.0 + group_w * summary.len().max(1) as f64;
    let panel_h = 220.0;
    let height = 110.0 + 2.0 * (panel_h + 70.0);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"20\" y=\"24\" font-size=\"15\">{}</text>\n",
        esc(title)
    );
    for (i, m) in modes.iter().enumerate() {
        let x = 20.0 + 110.0 * i as f64;
        svg.push_str(&format!(
            "<rect x=\"{x}\" y=\"36\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"46\">{}</text>\n",
            color(*m),
            x + 16.0,
            m.name()
        ));
    }
    type Pick<'a> = &'a dyn Fn(&Medians) -> Option<f64>;
    let panels: [(&str, Pick); 2] = [
        (
            "Throughput, MiB/s (median; each profile on its own scale)",
            &|m: &Medians| Some(m.mib_per_s),
        ),
        (
            "Read p99 latency, us (median; lower is better)",
            &|m: &Medians| m.read_p99_us,
        ),
    ];
    for (pi, (label, value)) in panels.iter().enumerate() {
        let top = 80.0 + pi as f64 * (panel_h + 70.0);
        let base = top + 20.0 + panel_h;
        svg.push_str(&format!(
            "<text x=\"20\" y=\"{}\" font-size=\"13\">{}</text>\n",
            top + 10.0,
            esc(label)
        ));
        svg.push_str(&format!(
            "<line x1=\"40\" y1=\"{base}\" x2=\"{:.0}\" y2=\"{base}\" stroke=\"#333\"/>\n",
            width - 20.0
        ));
        for (gi, s) in summary.iter().enumerate() {
            let gx = 60.0 + group_w * gi as f64;
            let vals: Vec<(Mode, Option<f64>)> = modes
                .iter()
                .map(|m| (*m, s.get(*m).and_then(value)))
                .collect();
            let max = vals.iter().filter_map(|(_, v)| *v).fold(0.0f64, f64::max);
            for (bi, (mode, v)) in vals.iter().enumerate() {
                let x = gx + 50.0 * bi as f64;
                match v {
                    Some(v) if max > 0.0 => {
                        let h = (v / max) * (panel_h - 20.0);
                        svg.push_str(&format!(
                            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"40\" height=\"{h:.1}\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
                            base - h,
                            color(*mode),
                            x + 20.0,
                            base - h - 4.0,
                            if *v >= 100.0 { format!("{v:.0}") } else { format!("{v:.1}") }
                        ));
                    }
                    _ => svg.push_str(&format!(
                        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#999\">n/a</text>\n",
                        x + 20.0,
                        base - 4.0
                    )),
                }
            }
            svg.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
                gx + 25.0 * modes.len() as f64 - 5.0,
                base + 16.0,
                esc(&s.profile)
            ));
        }
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::load::ClassResult;

    fn run(round: usize, mode: Mode, ops: u64) -> RunRecord {
        let mut lat: Vec<u64> = (1..=100).map(|i| i * 1000 * ops).collect();
        RunRecord {
            round,
            profile: "rand-read".into(),
            mode,
            result: RunResult {
                seconds: 1.0,
                classes: vec![ClassResult {
                    name: "rand-read".into(),
                    reads: ops,
                    bytes: ops * 4096,
                    ..Default::default()
                }],
                read_lat: LatStats::from_nanos(&mut lat),
                // 2 us of CPU per operation, half user, half system.
                cpu_user_s: ops as f64 * 1e-6,
                cpu_system_s: ops as f64 * 1e-6,
                // 3 voluntary context switches and 1 preemption per operation.
                voluntary_switches: 3 * ops,
                involuntary_switches: ops,
                ..Default::default()
            },
            counters: None,
        }
    }

    #[test]
    fn cpu_per_operation_and_the_latency_the_engine_adds_are_reported() {
        // Mean latency of run(_, _, n) is 50.5 * n us.
        let runs = vec![
            run(0, Mode::Raw, 1),
            run(0, Mode::Legacy, 4),
            run(0, Mode::Direct, 2),
            run(1, Mode::Raw, 2),
            run(1, Mode::Legacy, 4),
            run(1, Mode::Direct, 3),
        ];
        let mut s = summarize(&["rand-read".to_string()], &runs);
        let raw = s[0].get(Mode::Raw).unwrap();
        assert!((raw.cpu_us_per_op.unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(raw.context_switches_per_op, Some(3.0));
        assert_eq!(raw.preemptions_per_op, Some(1.0));
        assert!((raw.mean_latency_us.unwrap() - 75.75).abs() < 1e-9);
        assert!((s[0].added_latency_direct_us.unwrap() - 50.5).abs() < 1e-9);
        assert!((s[0].added_latency_legacy_us.unwrap() - 126.25).abs() < 1e-9);
        assert!(!table(&s, &runs, false).contains("direct-raw"));
        s[0].lone = true;
        let t = table(&s, &runs, false);
        assert!(t.contains("CPU us/op") && t.contains("direct-raw"), "{t}");
        assert!(t.contains("vcsw/op") && t.contains("ivcsw/op"), "{t}");
        let j = summary_json(&s);
        assert!(j[0]["median"]["direct"]["cpu_us_per_op"].is_number());
        assert_eq!(j[0]["median"]["direct"]["context_switches_per_op"], 3.0);
        assert_eq!(j[0]["median"]["direct"]["preemptions_per_op"], 1.0);
        let added = j[0]["added_mean_latency_us"]["direct"].as_f64().unwrap();
        assert!((added - 50.5).abs() < 1e-9);
        assert!(runs_json(&runs)[0]["cpu_us_per_op"].is_number());
        assert_eq!(runs_json(&runs)[0]["context_switches_per_op"], 3.0);
        assert_eq!(runs_json(&runs)[0]["voluntary_switches"], 3);
    }

    #[test]
    fn ratios_are_medians_of_per_round_ratios_and_missing_modes_are_null() {
        let runs = vec![
            run(0, Mode::Raw, 100),
            run(0, Mode::RawQd8, 50),
            run(1, Mode::Raw, 200),
            run(1, Mode::RawQd8, 180),
            run(2, Mode::Raw, 100),
            run(2, Mode::RawQd8, 80),
        ];
        let s = summarize(&["rand-read".to_string()], &runs);
        assert_eq!(s[0].get(Mode::Raw).unwrap().iops, 100.0);
        assert_eq!(s[0].ratio_raw_qd8_raw, Some(0.8));
        assert_eq!(s[0].ratio_direct_raw, None);
        let j = summary_json(&s);
        assert!(j[0]["median"]["direct"].is_null());
        assert!(j[0]["median"]["raw"]["write_p99_us"].is_null());
        assert!(j[0]["median"]["raw"]["read_p99_us"].is_number());
        assert!(j[0]["ratio_direct_legacy"].is_null());
        assert_eq!(runs_json(&runs)[0]["counters"], Value::Null);
        let svg = svg_chart(&s, "t<1>");
        assert!(
            svg.starts_with("<svg")
                && svg.contains("t&lt;1&gt;")
                && svg.trim_end().ends_with("</svg>")
        );
        assert!(table(&s, &runs, true).contains("rand-read"));
    }

    #[test]
    fn median_of_even_and_odd_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }
}
