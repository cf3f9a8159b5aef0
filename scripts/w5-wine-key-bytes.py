#!/usr/bin/env python3
"""W5 under Wine: where the volume's key bytes are in the memory of the driver's process.

Usage (as root, or as the process's owner with ptrace rights):
  w5-wine-key-bytes.py PID MASTER_KEY_HEX mounted BLOCK_ADDR BLOCK_LEN
  w5-wine-key-bytes.py PID MASTER_KEY_HEX erased|dismounted
  w5-wine-key-bytes.py --self-test

Reads every readable mapping of winedevice.exe PID through /proc/PID/maps and /proc/PID/mem and
finds every occurrence of the 15 AES-256 round keys of each half of the 64-byte XTS master key
(the data and the tweak key; round keys 0 and 1 are the master key's halves). The round keys
are computed here (FIPS-197 key expansion, the S-box from GF(2^8) inverses), not taken from the
driver. Each hit is classified by where it lies:

  key block   inside BLOCK_ADDR..+BLOCK_LEN, the cipher's one block, which the Wine build of
              vcdirect.sys names in its log at each mount ("W5 key block of volume N at ...");
              Wine's heap does not say who owns a block, so the driver's own word is the only
              exact way to tell its block from any other.
  linux       an XMM register saved by Linux in a signal frame (inside an FXSAVE area whose
              software-reserved bytes hold FP_XSTATE_MAGIC1), listed, not failed;
  wine        the TEB and signal stack of a Wine thread (the 64 KiB block a TEB starts),
              listed, not failed;
  stack       the stack of a Windows thread of the process (its TEB's DeallocationStack up to
              StackBase): the driver's stacks; a failure;
  image       a file mapping (vcdirect.sys or another module): a failure;
  other       any other memory (other heap blocks, pool the driver allocated): a failure.

Wine 8.0's ntoskrnl makes no copy of the mount IOCTL's input of its own: it hands the buffer it
received the request in to the driver as the system buffer (the reply is shorter than the
input), and the driver wipes it; a hit there is "other", the driver's failure.

"mounted" passes when every hit is in the key block or listed, and the key block holds all 30
round keys (so the scan did read the driver's memory); "erased" and "dismounted" pass when no
hit is left but listed ones. Memory that cannot be read fails the check, never skips it. Prints
each hit, then one summary line; exits 0 on pass, 1 on failure, 2 on bad usage.
"""
import struct
import sys

FP_XSTATE_MAGIC1 = 0x46505853
PAGE = 4096
# The kernel's pseudo mappings /proc/PID/mem cannot read.
UNREADABLE_BY_DESIGN = ("[vvar]", "[vvar_vclock]", "[vsyscall]")


def gf_mul(a, b):
    p = 0
    while b:
        if b & 1:
            p ^= a
        a = ((a << 1) ^ (0x1B if a & 0x80 else 0)) & 0xFF
        b >>= 1
    return p


def sbox():
    inv = [0] * 256
    for x in range(1, 256):
        inv[x] = next(y for y in range(1, 256) if gf_mul(x, y) == 1)
    rot = lambda v, n: ((v << n) | (v >> (8 - n))) & 0xFF
    return [v ^ rot(v, 1) ^ rot(v, 2) ^ rot(v, 3) ^ rot(v, 4) ^ 0x63 for v in inv]


def round_keys(key, s):
    """The 15 round keys of AES-256 (FIPS-197 section 5.2)."""
    w = [list(key[i : i + 4]) for i in range(0, 32, 4)]
    rcon = 1
    for i in range(8, 60):
        t = list(w[i - 1])
        if i % 8 == 0:
            t = [s[t[1]] ^ rcon, s[t[2]], s[t[3]], s[t[0]]]
            rcon = gf_mul(rcon, 2)
        elif i % 8 == 4:
            t = [s[b] for b in t]
        w.append([a ^ b for a, b in zip(w[i - 8], t)])
    return [bytes(sum(w[4 * r : 4 * r + 4], [])) for r in range(15)]


def read_mappings(pid):
    """(lo, hi, perms, name, bytes) of each readable mapping; raises on one that fails."""
    out = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps.read().splitlines():
            f = line.split(None, 5)
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            name = f[5].strip() if len(f) > 5 else ""
            if "r" not in f[1] or name in UNREADABLE_BY_DESIGN:
                continue
            mem.seek(lo)
            data = mem.read(hi - lo)
            if len(data) != hi - lo:
                raise OSError(f"short read of {f[0]} {name}")
            out.append((lo, hi, f[1], name, data))
    return out


def tebs(maps):
    """Address of every TEB: a page of an anonymous mapping whose NtTib.Self points to it."""
    found = []
    for lo, hi, _, name, data in maps:
        if name:
            continue
        for off in range(0, len(data) - PAGE + 1, PAGE):
            if struct.unpack_from("<Q", data, off + 0x30)[0] == lo + off:
                found.append((lo + off, data, off))
    teb = []
    for at, data, off in found:
        base, limit = struct.unpack_from("<QQ", data, off + 0x08)
        dealloc = struct.unpack_from("<Q", data, off + 0x1478)[0] if off + 0x1480 <= len(data) else 0
        low = dealloc if 0 < dealloc < base else limit
        teb.append((at, low, base))
    return teb


def in_signal_frame(maps_by_addr, addr):
    """True if addr is one of the 16 XMM slots of an FXSAVE area Linux wrote in a signal frame."""
    for i in range(16):
        fx = addr - 160 - 16 * i
        if fx % 16:
            continue
        magic = maps_by_addr(fx + 464, 4)
        if magic is not None and struct.unpack("<I", magic)[0] == FP_XSTATE_MAGIC1:
            return True
    return False


def self_test():
    """The checker checks itself: FIPS-197's AES-256 example (Appendix A.3), then a child
    process that holds the 30 round keys in one buffer: found there, and failed without it."""
    import ctypes
    import subprocess

    rks = round_keys(bytes(range(32)), sbox())
    if rks[0] != bytes(range(16)) or rks[14].hex() != "24fc79ccbf0979e9371ac23c6d68de36":
        print("FAIL self-test: the key expansion differs from FIPS-197 Appendix A.3")
        return 1
    key = bytes((i * 73 + 0x5C) % 256 ^ 0xA7 for i in range(64))
    s = sbox()
    all_rks = "".join(rk.hex() for half in (key[:32], key[32:]) for rk in round_keys(half, s))
    # The child fills its buffer from hex text, byte by byte: no other copy of the raw bytes.
    child_code = (
        "import ctypes,sys\n"
        "h=sys.stdin.readline().strip()\n"
        "b=(ctypes.c_ubyte*(len(h)//2))()\n"
        "for i in range(len(h)//2): b[i]=int(h[2*i:2*i+2],16)\n"
        "print(hex(ctypes.addressof(b)),len(h)//2,flush=True)\n"
        "sys.stdin.readline()\n"
    )
    child = subprocess.Popen([sys.executable, "-c", child_code], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        child.stdin.write(all_rks + "\n")
        child.stdin.flush()
        at, length = child.stdout.readline().split()
        args = [sys.argv[0], str(child.pid), key.hex()]
        found = main(args + ["mounted", at, length], quiet=True)
        missed = main(args + ["dismounted"], quiet=True)
    finally:
        child.stdin.write("\n")
        child.stdin.flush()
        child.wait()
    if found != 0 or missed != 1:
        print(f"FAIL self-test: the child's buffer gave {found} (want 0) mounted, {missed} (want 1) without it")
        return 1
    print("PASS self-test: FIPS-197 A.3 round keys; a child's 30 round keys found in its buffer, and failed as 'other' without it")
    return 0


def main(argv, quiet=False):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) not in (4, 6) or argv[3] not in ("mounted", "erased", "dismounted"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    pid, key, phase = int(argv[1]), bytes.fromhex(argv[2]), argv[3]
    block = (int(argv[4], 16), int(argv[5])) if len(argv) == 6 else None
    if len(key) != 64 or (phase == "mounted") != (block is not None):
        print("w5-wine-key-bytes: a 64-byte key, and a block exactly for 'mounted'", file=sys.stderr)
        return 2
    s = sbox()
    patterns = {}
    for half, name in ((key[:32], "data"), (key[32:], "tweak")):
        for i, rk in enumerate(round_keys(half, s)):
            patterns[rk] = f"{name} round key {i}"
    # A mapping the process unmaps between reading maps and mem fails the read: read all again
    # (twice at most); memory that still cannot be read fails the check.
    for attempt in range(3):
        try:
            maps = read_mappings(pid)
            break
        except OSError as e:
            if attempt == 2:
                print(f"FAIL the memory of pid {pid} cannot be read: {e}")
                return 1
    scanned = sum(hi - lo for lo, hi, *_ in maps)

    def read_at(addr, n):
        for lo, hi, _, _, data in maps:
            if lo <= addr and addr + n <= hi:
                return data[addr - lo : addr - lo + n]
        return None

    threads = tebs(maps)
    counts = {}
    bad, listed, in_block = [], [], set()
    for lo, hi, perms, name, data in maps:
        for pattern, what in patterns.items():
            i = data.find(pattern)
            while i >= 0:
                addr = lo + i
                i = data.find(pattern, i + 1)
                teb = next((t for t in threads if t[1] <= addr < t[2]), None)
                wine = next((t for t in threads if t[0] <= addr < t[0] + 0x10000), None)
                if block and block[0] <= addr and addr + 16 <= block[0] + block[1]:
                    kind, detail = "key block", f"the cipher's block at {block[0]:#x}"
                    in_block.add(what)
                elif (teb or wine) and in_signal_frame(read_at, addr):
                    kind, detail = "linux", "an XMM register in a signal frame"
                elif teb:
                    kind, detail = "stack", f"the stack of the thread with TEB {teb[0]:#x}"
                elif wine:
                    kind, detail = "wine", f"the TEB and signal stack at {wine[0]:#x}"
                elif name:
                    kind, detail = "image", name
                else:
                    kind, detail = "other", f"anonymous {lo:#x}-{hi:#x} {perms} (heap or pool)"
                counts[kind] = counts.get(kind, 0) + 1
                line = f"{kind}: {what} at {addr:#x} ({detail})"
                if not quiet:
                    print(f"  hit {line}")
                (listed if kind in ("key block", "linux", "wine") else bad).append(line)
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no hit"
    head = f"pid {pid}, {phase}: {scanned} bytes of {len(maps)} mappings, {len(threads)} thread stacks; {summary}"
    say = (lambda line: None) if quiet else print
    if bad:
        say(f"FAIL {head}; the driver's: {bad[0]}" + (f" and {len(bad) - 1} more" if len(bad) > 1 else ""))
        return 1
    if block and len(in_block) != len(patterns):
        say(f"FAIL {head}; the key block holds {len(in_block)} of the {len(patterns)} round keys: not the driver's memory")
        return 1
    say(f"PASS {head}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
