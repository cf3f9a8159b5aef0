#!/usr/bin/env python3
"""Checks that the repository's words point at the repository (run by scripts/lint.sh).

1. Every relative Markdown link (`[text](path)`, `[text](path#anchor)`) in a tracked `.md` file
   resolves to a tracked file or folder inside the repository, and an anchor into a Markdown
   file names one of its headings (GitHub's slugs).
2. Every cited `docs/...` path, in any tracked text file (Markdown, code comments, scripts,
   tables), names a tracked file or folder; so does every cited path under the repository's
   other top-level folders (`driver/`, `scripts/`, ...) in a Markdown file.
3. Nothing cites a place outside the repository: a link that climbs out of it, or a folder the
   checkout may have beside it (`SIBLINGS`).
4. No internal label in a Markdown file: issue or item numbers, session numbers, a review's
   finding labels such as "SHOULD 2" or "NOTE 5". The requirement ids R1..R14 and W1..W16 are
   names of requirements and stay.

Exit 1 with one line per finding (file:line: what), 0 when clean.
`check-docs.py --self-test` runs the checks on a scratch tree with one of each mistake and
fails unless every one is reported (the proof that the checks bite).
"""

import os
import re
import subprocess
import sys
import tempfile

LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
IMAGE = re.compile(r"!\[[^\]\n]*\]\(([^)\s]+)\)")
DOCS_PATH = re.compile(r"(?<![\w./-])(docs/[A-Za-z0-9_./-]*[A-Za-z0-9_/])([*{<]?)")
# Folders beside the checkout that the repository must not cite (its name is built here so
# that this file, which must name it, does not read as citing it).
SIBLINGS = ["sha" + "red"]
OUTSIDE = re.compile(
    r"\.\./(?:%s)\b|(?<![\w.-])(?:%s)/(?:testdata|docs|DESIGN\.md|REVIEW\.md|WINDOWS\.md)"
    % ("|".join(SIBLINGS), "|".join(SIBLINGS)))
LABELS = [
    (re.compile(r"\b[Ii]ssues? #?\d+"), "an issue number"),
    (re.compile(r"\b[Ii]tems? \d+\b"), "an item number"),
    (re.compile(r"\b[Ss]essions? \d+\b"), "a session number"),
    (re.compile(r"\b(?:MUST|SHOULD|NOTE|NIT|COULD)(?:-FIX)?[ -]?\d+\b"), "a review finding label"),
    (re.compile(r"\bSHOULD-FIX\b|\bre-review\b"), "a review finding label"),
]
# This file names the mistakes it looks for.
SELF = "scripts/check-docs.py"
TEXT_EXT = (".md", ".rs", ".sh", ".py", ".toml", ".txt", ".tsv", ".inx", ".h", ".c", ".yml")


def tracked(root):
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root, check=True, capture_output=True,
    ).stdout.decode()
    files = [f for f in out.split("\0") if f and os.path.exists(os.path.join(root, f))]
    dirs = set()
    for f in files:
        parts = f.split("/")
        for i in range(1, len(parts)):
            dirs.add("/".join(parts[:i]))
    return files, dirs


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found, seen = set(), {}
    in_code = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                in_code = not in_code
                continue
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m and not in_code:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                found.add(s if n == 0 else f"{s}-{n}")
                seen[s] = n + 1
    return found


def is_pattern(line, m):
    """A cited path followed by a wildcard or placeholder (`imports-*.txt`, `imports-<flavour>`)."""
    after = line[m.end(1):m.end(1) + 2]
    return any(c in after for c in "*{<")


def check(root):
    root = os.path.realpath(root)
    files, dirs = tracked(root)
    known = set(files) | dirs
    tops = sorted({f.split("/")[0] for f in files if "/" in f and not f.startswith(".")})
    top_path = re.compile(
        r"(?<![\w./-])((?:%s)/[A-Za-z0-9_./-]*[A-Za-z0-9_/])([*{<]?)" % "|".join(map(re.escape, tops))
    ) if tops else None
    problems = []

    def exists(rel):
        rel = rel.rstrip("/")
        return rel in known

    for f in files:
        if not f.endswith(TEXT_EXT) or f == SELF:
            continue
        path = os.path.join(root, f)
        try:
            lines = open(path, encoding="utf-8").read().splitlines()
        except UnicodeDecodeError:
            continue
        is_md = f.endswith(".md")
        in_code = False
        for n, line in enumerate(lines, 1):
            where = f"{f}:{n}"
            if OUTSIDE.search(line):
                problems.append(f"{where}: cites a place outside the repository: {OUTSIDE.search(line).group(0)}")
            if is_md:
                if line.lstrip().startswith("```"):
                    in_code = not in_code
                for pattern, what in LABELS:
                    m = pattern.search(line)
                    if m:
                        problems.append(f"{where}: internal label ({what}): {m.group(0)!r}")
                for m in list(LINK.finditer(line)) + list(IMAGE.finditer(line)):
                    target = m.group(1)
                    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("<"):
                        continue  # a URL or mailto
                    file_part, _, anchor = target.partition("#")
                    if not file_part:
                        dest = f
                    else:
                        dest = os.path.normpath(os.path.join(os.path.dirname(f), file_part))
                        if dest.startswith(".."):
                            problems.append(f"{where}: link leaves the repository: {target}")
                            continue
                        if not exists(dest):
                            problems.append(f"{where}: link to a missing file: {target}")
                            continue
                    if anchor and dest.endswith(".md") and os.path.isfile(os.path.join(root, dest)):
                        if anchor not in anchors(os.path.join(root, dest)):
                            problems.append(f"{where}: link to a missing heading: {target}")
            # Cited paths: docs/ everywhere; other top-level folders in Markdown prose.
            for m in DOCS_PATH.finditer(line):
                cited = m.group(1)
                if is_pattern(line, m) or "/target" in cited:
                    continue  # a pattern (docs/*.md) or a build output
                if not exists(cited) and not exists(os.path.normpath(os.path.join(os.path.dirname(f), cited))):
                    problems.append(f"{where}: cites a missing path: {cited}")
            if is_md and not in_code and top_path:
                for m in top_path.finditer(line):
                    cited = m.group(1)
                    if cited.startswith("docs/"):
                        continue
                    if is_pattern(line, m) or "/target" in cited:
                        continue  # a pattern (sys/imports-*.txt) or a build output
                    if not exists(cited):
                        problems.append(f"{where}: cites a missing path: {cited}")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        run = lambda *a: subprocess.run(a, cwd=tmp, check=True, capture_output=True)
        run("git", "init", "-q")
        os.makedirs(os.path.join(tmp, "docs"))
        os.makedirs(os.path.join(tmp, "driver", "src"))
        with open(os.path.join(tmp, "docs", "a.md"), "w") as f:
            f.write("# A\n\n## Real heading\n\nSee [b](b.md), [real](#real-heading), [lib](../driver/src/lib.rs).\n")
        with open(os.path.join(tmp, "docs", "b.md"), "w") as f:
            f.write("# B\n")
        with open(os.path.join(tmp, "driver", "src", "lib.rs"), "w") as f:
            f.write("//! See docs/a.md.\n")
        with open(os.path.join(tmp, "README.md"), "w") as f:
            f.write("# R\n\n[a](docs/a.md#real-heading) and driver/src/lib.rs, R1 and W16.\n")
        clean = check(tmp)
        if clean:
            print("check-docs self-test: FAILED: a clean tree gave findings:", *clean, sep="\n  ")
            return 1
        with open(os.path.join(tmp, "README.md"), "a") as f:
            f.write("[gone](docs/gone.md) [nohead](docs/a.md#nowhere) [out](../elsewhere/x.md)\n")
            f.write("As issue 23 item 3 said, and review SHOULD 2 in session 7.\n")
            f.write("Read driver/src/nothing.rs.\n")
        with open(os.path.join(tmp, "driver", "src", "lib.rs"), "a") as f:
            f.write(f"// docs/missing.md and ../{SIBLINGS[0]}/testdata/x\n")
        found = "\n".join(check(tmp))
        expected = [
            "link to a missing file: docs/gone.md",
            "link to a missing heading: docs/a.md#nowhere",
            "link leaves the repository: ../elsewhere/x.md",
            "an issue number", "an item number", "a review finding label", "a session number",
            "cites a missing path: driver/src/nothing.rs",
            "driver/src/lib.rs:2: cites a missing path: docs/missing.md",
            "driver/src/lib.rs:2: cites a place outside the repository",
        ]
        missed = [e for e in expected if e not in found]
        if missed:
            print("check-docs self-test: FAILED: not reported:", *missed, sep="\n  ")
            print(found)
            return 1
        print(f"check-docs self-test: ok ({len(expected)} planted mistakes reported, clean tree clean)")
        return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check-docs: FAILED: {len(problems)} finding(s)")
        return 1
    print("check-docs: every link and cited path resolves inside the repository; no internal labels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
