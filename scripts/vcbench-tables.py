#!/usr/bin/env python3
"""Markdown tables from vcbench's JSON (docs/measurements.md "Current results").

    scripts/vcbench-tables.py full target/vcbench/main.json      every profile and mode
    scripts/vcbench-tables.py headline FILE.json MODEL.json       the README's table, both hosts
    scripts/vcbench-tables.py crypto target/vcbench/crypto.json   the cipher's figures

Numbers are copied from the JSON as vcbench computed them (medians over rounds, ratios as
medians of per-round ratios); nothing is measured here.
"""

import json
import sys

MODES = [("raw", "raw"), ("raw_qd8", "raw-qd8"), ("legacy", "legacy"), ("direct", "direct")]


def num(v, digits=0):
    if v is None:
        return "-"
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def full(path):
    j = json.load(open(path))
    out = [
        "| profile | mode | IOPS | MiB/s | read p99 us | write p99 us | mean us | CPU us/op | vcsw/op |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in j["summary"]:
        for key, name in MODES:
            m = s["median"].get(key)
            if not m:
                continue
            out.append(
                f"| {s['profile']} | {name} | {num(m['iops'])} | {num(m['mib_per_s'], 1)} | "
                f"{num(m['read_p99_us'])} | {num(m['write_p99_us'])} | {num(m['mean_latency_us'], 1)} | "
                f"{num(m['cpu_us_per_op'], 1)} | {num(m.get('context_switches_per_op'), 2)} |"
            )
    out += ["", "| profile | direct/legacy | direct/raw | direct/raw-qd8 | lone request: legacy - raw, direct - raw (mean us) |",
            "| --- | --- | --- | --- | --- |"]
    for s in j["summary"]:
        added = s.get("added_mean_latency_us") or {}
        lone = (f"+{num(added.get('legacy'))} / +{num(added.get('direct'))}"
                if s.get("one_request_in_flight") else "-")
        out.append(f"| {s['profile']} | {num(s['ratio_direct_legacy'], 2)} | {num(s['ratio_direct_raw'], 2)} | "
                   f"{num(s['ratio_direct_raw_same_qd'], 2)} | {lone} |")
    return "\n".join(out)


def headline(file_json, model_json):
    f, m = json.load(open(file_json)), json.load(open(model_json))

    def by(j):
        return {s["profile"]: s for s in j["summary"]}

    fs, ms = by(f), by(m)
    rows = [
        ("seq-read", "1 MiB sequential reads, 2 x 4"),
        ("seq-write", "1 MiB sequential writes, 2 x 4"),
        ("rand-read", "4 KiB random reads, 4 x 32"),
        ("rand-write", "4 KiB random writes, 4 x 32"),
        ("mixed-70-30", "4 KiB random, 30 % writes, 4 x 32"),
        ("seq1m-q1t1", "1 MiB reads, one at a time (a file copy)"),
        ("rnd4k-q1t1", "4 KiB reads, one at a time"),
    ]
    out = ["| profile | file: direct/legacy | file: direct/raw-qd8 | model: direct/legacy | model: direct/raw-qd8 |",
           "| --- | --- | --- | --- | --- |"]
    for p, what in rows:
        a, b = fs.get(p, {}), ms.get(p, {})
        out.append(f"| {what} | {num(a.get('ratio_direct_legacy'), 2)} | {num(a.get('ratio_direct_raw_same_qd'), 2)} | "
                   f"{num(b.get('ratio_direct_legacy'), 2)} | {num(b.get('ratio_direct_raw_same_qd'), 2)} |")

    def cpu(s, key):
        return num(((s.get("median") or {}).get(key) or {}).get("cpu_us_per_op"), 0)

    def sw(s, key):
        return num(((s.get("median") or {}).get(key) or {}).get("context_switches_per_op"), 1)

    lines = []
    for label, s in (("file", fs), ("model", ms)):
        rr, lone = s.get("rand-read", {}), s.get("rnd4k-q1t1", {})
        added = lone.get("added_mean_latency_us") or {}
        raw_lat = ((lone.get("median") or {}).get("raw") or {}).get("mean_latency_us")
        lines.append(
            f"| {label} | {cpu(rr, 'raw_qd8')} / {cpu(rr, 'legacy')} / {cpu(rr, 'direct')} | "
            f"{num(raw_lat)} us; legacy +{num(added.get('legacy'))}, direct +{num(added.get('direct'))} | "
            f"{sw(lone, 'raw')} / {sw(lone, 'legacy')} / {sw(lone, 'direct')} |")
    out += ["", "| host | CPU us per 4 KiB random read: raw-qd8 / legacy / direct | a lone 4 KiB read: raw, and what each path adds (mean) | context switches per lone 4 KiB read: raw / legacy / direct |",
            "| --- | --- | --- | --- |"] + lines
    return "\n".join(out)


def crypto(path):
    j = json.load(open(path))
    size = lambda b: f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB" if b >= 1024 else f"{b} B"
    lines = [
        f"CPU: {j.get('cpu_model')}; AES-related flags: {' '.join(j.get('cpu_aes_flags') or [])}; "
        f"median of {j.get('rounds')} interleaved rounds, one core, GB/s one way.",
        "",
        "| path | buffer | encrypt | OpenSSL encrypt | ratio | decrypt | OpenSSL decrypt | ratio |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in j["results"]:
        lines.append(
            f"| {r['path']} | {size(r['bytes'])} | {r['encrypt_gbps']:.2f} | {num(r.get('openssl_encrypt_gbps'), 2)} | "
            f"{num(r.get('encrypt_ratio'), 2)} | {r['decrypt_gbps']:.2f} | {num(r.get('openssl_decrypt_gbps'), 2)} | "
            f"{num(r.get('decrypt_ratio'), 2)} |")
    lines += ["", f"VAES path: {j.get('vaes')}."]
    algorithms = j.get("algorithms") or []
    if algorithms:
        # One row per algorithm: GB/s at each measured size, encrypt / decrypt.
        sizes = sorted({r["bytes"] for r in algorithms})
        lines += ["", "Every algorithm on the engine's volume cipher (GB/s, encrypt / decrypt):", "",
                  "| algorithm | " + " | ".join(size(b) for b in sizes) + " |",
                  "| --- | " + " | ".join("---" for _ in sizes) + " |"]
        names = []
        for r in algorithms:
            if r["algorithm"] not in names:
                names.append(r["algorithm"])
        for name in names:
            cells = []
            for b in sizes:
                row = next((r for r in algorithms if r["algorithm"] == name and r["bytes"] == b), None)
                cells.append("-" if row is None else f"{row['encrypt_gbps']:.3f} / {row['decrypt_gbps']:.3f}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "full":
        print(full(sys.argv[2]))
    elif len(sys.argv) >= 4 and sys.argv[1] == "headline":
        print(headline(sys.argv[2], sys.argv[3]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "crypto":
        print(crypto(sys.argv[2]))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
