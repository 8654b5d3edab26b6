#!/usr/bin/env python3
"""A second, independent reader of Jane Street memtrace traces, written from the format's
description (shared/notes/formats.md; memtrace's src/memtrace.tsdl and trace.ml), not from our C
code.  It parses every packet of a trace, checks what the format promises, and prints totals as
JSON on stdout:

  memtrace_reader.py TRACE [--at SECONDS]

Totals: packets, locations, allocations, collects; the sampled-bytes estimate of everything
allocated (nsamples / sample_rate * word_size summed) and of what is live at the end (or SECONDS
after the start); both per leaf function (the last location of the backtrace).  A malformed
trace: one line on stderr, exit 1.
"""
import json
import struct
import sys

MAGIC = 0xC1FC1FC1
MAX_PACKET = 32768
MTF = 31
CACHE = 1 << 14


class Bad(Exception):
    pass


class Buf:
    def __init__(self, data):
        self.d = data
        self.i = 0

    def left(self):
        return len(self.d) - self.i

    def take(self, n, what):
        if self.left() < n:
            raise Bad(f"{what}: {n} bytes wanted, {self.left()} left")
        b = self.d[self.i:self.i + n]
        self.i += n
        return b

    def u(self, n, what):
        return int.from_bytes(self.take(n, what), "little")

    def f64(self, what):
        return struct.unpack("<d", self.take(8, what))[0]

    def vint(self, what):
        c = self.u(1, what)
        if c < 253:
            return c
        return self.u({253: 2, 254: 4, 255: 8}[c], what)

    def cstr(self, what):
        end = self.d.find(b"\0", self.i)
        if end < 0:
            raise Bad(f"{what}: no NUL")
        s = self.d[self.i:end].decode("utf-8", "replace")
        self.i = end + 1
        return s


def header(f):
    """(header dict, content bytes) or None at a clean end of file."""
    first = f.read(30)
    if not first:
        return None
    if len(first) < 30:
        raise Bad("truncated header")
    b = Buf(first)
    magic = b.u(4, "magic")
    if magic != MAGIC:
        raise Bad(f"bad magic {magic:#x}")
    size_bits = b.u(4, "size")
    h = {"ts_begin": b.u(8, "ts"), "ts_end": b.u(8, "ts")}
    b.u(4, "flush")
    h["version"] = b.u(2, "version")
    if h["version"] > 3:
        raise Bad(f"version {h['version']}")
    hsize = 68 if h["version"] >= 3 else 66
    rest = f.read(hsize - 30)
    if len(rest) != hsize - 30:
        raise Bad("truncated header")
    b = Buf(first + rest)
    b.i = 30
    h["pid"] = b.u(8, "pid")
    h["domain"] = b.u(2, "domain") if h["version"] >= 3 else 0
    h["verify"] = (b.u(2, "vix"), b.u(2, "vpred"), b.u(8, "vval"))
    h["id_begin"] = b.u(8, "id0")
    h["id_end"] = b.u(8, "id1")
    if size_bits % 8 or size_bits // 8 < hsize or size_bits // 8 > MAX_PACKET:
        raise Bad(f"packet size {size_bits} bits")
    if h["ts_begin"] > h["ts_end"] or h["id_begin"] > h["id_end"]:
        raise Bad("header times or ids out of order")
    n = size_bits // 8 - hsize
    content = f.read(n)
    if len(content) != n:
        raise Bad("truncated packet")
    return h, content


def event_time(code_word, h):
    mask = (1 << 25) - 1
    low = code_word & mask
    if low < (h["ts_begin"] & mask):
        low += 1 << 25
    t = (h["ts_begin"] & ~mask) + low
    if not h["ts_begin"] <= t <= h["ts_end"]:
        raise Bad("event time outside its packet")
    return t


class Mtf:
    """Move-to-front table of (string, payload)."""

    def __init__(self):
        self.e = []

    def decode(self, code, new_string, make_payload):
        if code == MTF:
            payload = make_payload(self)
            self.e.insert(0, (new_string, payload))
            del self.e[MTF:]
        else:
            if code >= len(self.e):
                raise Bad(f"mtf code {code} of {len(self.e)}")
            self.e.insert(0, self.e.pop(code))
        return self.e[0]


def new_defs(files):
    # memtrace's reader: a new file inherits the defname table of the file pushed off.
    if len(files.e) == MTF:
        return files.e[-1][1]
    return Mtf()


class Domain:
    def __init__(self, start):
        self.files = Mtf()
        self.loc = [0] * CACHE
        self.pred = [0] * CACHE
        self.bt = []
        self.last = start


def backtrace(d, b, nenc):
    out = []
    pred = 0
    for _ in range(nenc):
        cw = b.u(2, "backtrace code")
        bucket, tag = cw >> 2, cw & 3
        d.pred[pred] = bucket
        if tag == 3:
            lit = b.u(8, "miss")
            d.loc[bucket] = lit
            out.append(lit)
            pred = bucket
            continue
        n = tag if tag < 2 else b.u(1, "hit count")
        out.append(d.loc[bucket])
        pred = bucket
        for _ in range(n):
            pred = d.pred[pred]
            out.append(d.loc[pred])
    return out


def read(path, at=None):
    r = {"packets": 0, "foreign_packets": 0, "locations": 0, "allocs": 0, "collects": 0,
         "promotes": 0, "alloc_samples": 0, "alloc_bytes": 0.0, "live_bytes": 0.0,
         "unknown_collects": 0, "unknown_codes": 0}
    locs = {}
    live = {}
    leaf_alloc, leaf_live = {}, {}
    doms = {}
    with open(path, "rb") as f:
        hc = header(f)
        if hc is None:
            raise Bad("empty file")
        h, content = hc
        b = Buf(content)
        cw = b.u(4, "event header")
        if cw >> 25 != 0 or event_time(cw, h) != h["ts_begin"]:
            raise Bad("first event is not trace_info")
        rate = b.f64("sample_rate")
        ws = b.u(1, "word_size")
        r["executable"] = b.cstr("exe")
        r["host"] = b.cstr("host")
        b.cstr("params")
        r["pid"] = b.u(8, "pid")
        r["context"] = b.cstr("context") if h["version"] >= 2 else ""
        if b.left():
            raise Bad("bytes after trace_info")
        if not 0 < rate <= 1 or ws == 0:
            raise Bad("sample rate or word size")
        r["sample_rate"], r["word_size"], r["version"] = rate, ws, h["version"]
        start = h["ts_begin"]
        end = start
        while True:
            hc = header(f)
            if hc is None:
                break
            h, content = hc
            r["packets"] += 1
            if h["pid"] != r["pid"]:
                r["foreign_packets"] += 1
                continue
            d = doms.setdefault(h["domain"], Domain(start))
            vix, vpred, vval = h["verify"]
            if vix != 0xFFFF and (vix >= CACHE or d.pred[vix] != vpred or d.loc[vix] != vval):
                raise Bad("cache verifier")
            b = Buf(content)
            ident = h["id_begin"]
            while b.left():
                cw = b.u(4, "event header")
                code, t = cw >> 25, event_time(cw, h)
                if t < d.last:
                    raise Bad("time goes backwards")
                d.last = t
                end = max(end, t)
                apply = at is None or t - start <= at * 1e6
                if code == 1:
                    lc = b.u(8, "location code")
                    entries = []
                    for _ in range(b.u(1, "nlocs")):
                        bits = b.u(4, "loc") | b.u(2, "loc") << 32
                        line = bits & 0xFFFFF
                        fcode = (bits >> 38) & 0x1F
                        dcode = (bits >> 43) & 0x1F
                        fname = b.cstr("file") if fcode == MTF else None
                        fname, defs = d.files.decode(fcode, fname, new_defs)
                        dname = b.cstr("defname") if dcode == MTF else None
                        dname, _ = defs.decode(dcode, dname, lambda t: None)
                        entries.append((fname, dname, line))
                    if lc in locs and locs[lc] != entries:
                        raise Bad("location described twice differently")
                    if lc not in locs:
                        r["locations"] += 1
                    locs[lc] = entries
                elif code == 2 or 101 <= code <= 116:
                    if code == 2:
                        length = b.vint("length")
                        ns = b.vint("nsamples")
                        if b.u(1, "source") > 2:
                            raise Bad("source")
                        prefix = b.vint("prefix")
                        nenc = b.u(2, "nencoded")
                    else:
                        length, ns = code - 100, 1
                        prefix = b.vint("prefix")
                        nenc = b.u(1, "nencoded")
                    codes = backtrace(d, b, nenc)
                    if prefix <= len(d.bt):
                        d.bt = d.bt[:prefix] + codes
                    obj = ident
                    ident += 1
                    r["allocs"] += 1
                    if not apply:
                        continue
                    leaf = "(none)"
                    if d.bt:
                        if d.bt[-1] in locs and locs[d.bt[-1]]:
                            leaf = locs[d.bt[-1]][-1][1]
                        else:
                            leaf = f"${d.bt[-1]}"
                    for c in d.bt:
                        if c not in locs:
                            r["unknown_codes"] += 1
                    est = ns / rate * ws
                    r["alloc_samples"] += ns
                    r["alloc_bytes"] += est
                    leaf_alloc[leaf] = leaf_alloc.get(leaf, 0.0) + est
                    live[obj] = (leaf, est)
                elif code == 4 or code == 3:
                    delta = b.vint("delta")
                    if code == 3:
                        r["promotes"] += 1
                        continue
                    r["collects"] += 1
                    if not apply:
                        continue
                    obj = ident - 1 - delta
                    if obj not in live:
                        r["unknown_collects"] += 1
                        continue
                    del live[obj]
                elif code == 0:
                    raise Bad("second trace_info")
                else:
                    raise Bad(f"event code {code}")
            if ident != h["id_end"]:
                raise Bad("alloc id sync")
    for leaf, est in live.values():
        r["live_bytes"] += est
        leaf_live[leaf] = leaf_live.get(leaf, 0.0) + est
    r["duration_us"] = end - start
    r["leaf_alloc_bytes"] = leaf_alloc
    r["leaf_live_bytes"] = leaf_live
    return r


def main():
    args = sys.argv[1:]
    at = None
    if len(args) == 3 and args[1] == "--at":
        at = float(args[2])
        args = args[:1]
    if len(args) != 1:
        sys.exit(__doc__)
    try:
        r = read(args[0], at)
    except Bad as e:
        print(f"memtrace_reader: {args[0]}: {e}", file=sys.stderr)
        sys.exit(1)
    json.dump(r, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
