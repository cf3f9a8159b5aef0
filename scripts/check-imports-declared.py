#!/usr/bin/env python3
"""Every routine a driver image imports is one Microsoft declares (scripts/check-sys.sh).

    check-imports-declared.py [--complete] IMAGE...   (--complete: these are all the images,
                                                        so every list entry must be imported)
    check-imports-declared.py --self-test

An import must be named by a `link!` declaration in the windows-sys crate's Windows Driver
Kit modules (`src/Windows/Wdk`, generated from the Windows Driver Kit metadata; they declare
the Zw* routines under ntdll.dll, so names are matched, not DLLs: which DLL each import comes
from is checked by sys/imports-<flavour>.txt), or be listed in
sys/imports-not-in-windows-sys.txt with the header that declares it and the first Windows
that exports it. A misspelt or invented import, which mingw-w64's import libraries would
accept, fails here. A list entry that windows-sys does declare fails too (the list stays
short), and so does one that no image imports (given --complete).
"""

import json
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LIST = os.path.join(ROOT, "sys", "imports-not-in-windows-sys.txt")


def windows_sys_wdk():
    """The newest windows-sys in the main workspace's lock that has the Wdk modules."""
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked"],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout)
    found = []
    for p in meta["packages"]:
        if p["name"] == "windows-sys":
            wdk = os.path.join(os.path.dirname(p["manifest_path"]), "src", "Windows", "Wdk")
            if os.path.isdir(wdk):
                found.append((tuple(int(x) for x in p["version"].split(".")), p["version"], wdk))
    if not found:
        sys.exit("check-imports-declared: no windows-sys with src/Windows/Wdk in the lock")
    return max(found)[1:]


def declared(wdk):
    names = set()
    pattern = re.compile(r'link!\("[^"]+" "[a-z]+" fn ([A-Za-z0-9_]+)')
    for base, _, files in os.walk(wdk):
        for f in files:
            if f.endswith(".rs"):
                with open(os.path.join(base, f), encoding="utf-8") as h:
                    names.update(pattern.findall(h.read()))
    return names


def listed():
    out = {}
    with open(LIST, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 4 or not all(c.strip() for c in cols):
                sys.exit(f"{LIST}:{n}: want name, header, first Windows, why (4 tab-separated columns)")
            out[cols[0]] = cols[1:]
    return out


def imports(image):
    text = subprocess.run(["llvm-readobj", "--coff-imports", image], check=True,
                          capture_output=True, text=True).stdout
    return set(re.findall(r"Symbol: (\S+)", text))


def self_test(known, extra):
    """The check bites: a misspelt kernel routine and an invented one are unknown, the real
    ones (declared, or listed) are not."""
    names = {"IoCreateDevice", "ZwReadFile", "memcpy", "IoCreateDeviec", "KeFrobnicate"}
    unknown = sorted(n for n in names if n not in known and n not in extra)
    ok = unknown == ["IoCreateDeviec", "KeFrobnicate"]
    print(f"  {'ok  ' if ok else 'FAIL'} a misspelt and an invented import are refused ({unknown})")
    return 0 if ok else 1


def main():
    args = sys.argv[1:]
    complete = "--complete" in args
    images = [a for a in args if a != "--complete"]
    if not images:
        print(__doc__)
        return 2
    version, wdk = windows_sys_wdk()
    known, extra = declared(wdk), listed()
    if images == ["--self-test"]:
        return self_test(known, extra)
    failed = 0
    used = set()
    for image in images:
        names = imports(image)
        used |= names
        unknown = sorted(n for n in names if n not in known and n not in extra)
        status = "ok  " if not unknown else "FAIL"
        print(f"  {status} {image}: {len(names)} imports, each declared by windows-sys {version}'s "
              f"Wdk modules ({len(names & known)}) or listed with its header ({len(names & set(extra))})"
              + (f"; unknown: {' '.join(unknown)}" if unknown else ""))
        failed += bool(unknown)
    stale = sorted(n for n in extra if n in known)
    unused = sorted(n for n in extra if n not in used) if complete else []
    for what, names in (("declared by windows-sys after all", stale), ("imported by no image", unused)):
        if names:
            print(f"  FAIL sys/imports-not-in-windows-sys.txt lists names {what}: {' '.join(names)}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
