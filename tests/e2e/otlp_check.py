#!/usr/bin/env python3
"""Checks the OTLP requests push_receiver.py stored, with protoc only (no code of ours reads
the wire format here):

    otlp_check.py RECV_DIR OUT_DIR PID FUNCTION [MODE]

Each DIR/NNNNNN.otlp.pb must decode with `protoc --decode_raw` (no schema) and with
tests/otlp/profiles_subset.proto (written from opentelemetry-proto v1.11.0's field numbers) with
no field left unknown; its ProfilesDictionary must follow the specification (every table
present, entry 0 the zero value, no duplicates, every index in range); one request must carry a
sample of process.pid PID whose stack holds FUNCTION, with thread.id, thread.name,
process.executable.name and process.executable.path (OTLP_EXE: the path expected); each
request's Profiles carry one time range, and those ranges are exactly the ones of the MODE
(default cpu) profiles written to OUT_DIR, each once (all but $OTLP_MISSING of them).  Prints the
number of requests.
"""
import glob
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import push_receiver as pr  # noqa: E402

SUBSET = "tests/otlp/profiles_subset.proto"
REQUEST = "opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest"
TABLES = ["mapping_table", "location_table", "function_table", "link_table", "string_table",
          "attribute_table", "stack_table"]


def protoc(args, data):
    r = subprocess.run(["protoc"] + args, input=data, capture_output=True, check=False)
    if r.returncode:
        sys.exit("protoc %s: %s" % (" ".join(args), r.stderr.decode(errors="replace")))
    return r.stdout.decode()


def unquote(s):
    """A text-format string literal (C escapes, octal for non-ASCII bytes) to str."""
    assert s[0] == '"' and s[-1] == '"', s
    return s[1:-1].encode("latin-1").decode("unicode_escape").encode("latin-1").decode()


def parse_text(text):
    """protoc's text format into dicts of lists (every field repeated, messages as dicts)."""
    root = {}
    stack = [root]
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if s == "}":
            stack.pop()
            continue
        if re.match(r"^[0-9]+[ :]", s):
            sys.exit("a field the subset does not know: %s" % s)
        m = re.match(r"^(\w+) \{$", s)
        if m:
            child = {}
            stack[-1].setdefault(m.group(1), []).append(child)
            stack.append(child)
            continue
        k, v = s.split(": ", 1)
        stack[-1].setdefault(k, []).append(unquote(v) if v.startswith('"') else int(v))
    assert len(stack) == 1, "unbalanced text format"
    return root


def one(msg, field, default=0):
    v = msg.get(field, [default])
    assert len(v) == 1, (field, v)
    return v[0]


def canon(x):
    return json.dumps(x, sort_keys=True)


def check_request(req):
    """The dictionary's rules; returns (dictionary, [(resource attrs, profile)])."""
    d = one(req, "dictionary")
    for t in TABLES:
        entries = d.get(t, [])
        assert entries, "no %s" % t
        assert entries[0] in ({}, ""), "%s[0] is not the zero value: %r" % (t, entries[0])
        seen = set()
        for e in entries:
            c = canon(e)
            assert c not in seen, "%s holds %s twice" % (t, c)
            seen.add(c)
    n = {t: len(d[t]) for t in TABLES}

    def strs(i):
        assert 0 <= i < n["string_table"], "string index %d" % i
        return d["string_table"][i]

    def attr_ok(i):
        assert 0 < i < n["attribute_table"], "attribute index %d" % i

    for m in d["mapping_table"]:
        strs(one(m, "filename_strindex"))
        for i in m.get("attribute_indices", []):
            attr_ok(i)
    for loc in d["location_table"]:
        assert 0 <= one(loc, "mapping_index") < n["mapping_table"]
        for line in loc.get("lines", []):
            assert 0 <= one(line, "function_index") < n["function_table"]
    for f in d["function_table"]:
        for k in ("name_strindex", "system_name_strindex", "filename_strindex"):
            strs(one(f, k))
    for a in d["attribute_table"][1:]:
        assert one(a, "key_strindex") > 0
        strs(one(a, "key_strindex"))
    for st in d["stack_table"][1:]:
        assert st.get("location_indices"), "an empty stack past entry 0"
        for i in st["location_indices"]:
            assert 0 < i < n["location_table"], "location index %d" % i
    profiles = []
    for rp in req.get("resource_profiles", []):
        attrs = {one(kv, "key", ""): one(one(kv, "value"), "string_value", "")
                 for kv in one(rp, "resource").get("attributes", [])}
        assert attrs.get("service.name"), attrs
        for sp in rp.get("scope_profiles", []):
            assert one(one(sp, "scope"), "name", "") == "bpftrace-prof"
            for prof in sp.get("profiles", []):
                vt = one(prof, "sample_type")
                strs(one(vt, "type_strindex"))
                for s in prof.get("samples", []):
                    assert 0 <= one(s, "stack_index") < n["stack_table"]
                    keys = []
                    for i in s.get("attribute_indices", []):
                        attr_ok(i)
                        keys.append(one(d["attribute_table"][i], "key_strindex"))
                    assert len(keys) == len(set(keys)), "an attribute key twice in a sample"
                    assert len(s.get("values", [])) == 1, s
                profiles.append((attrs, prof))
    assert profiles, "no profiles"
    return d, profiles


def sample_view(d, s):
    """(attributes as {key: value}, function names of the stack)."""
    attrs = {}
    for i in s.get("attribute_indices", []):
        a = d["attribute_table"][i]
        v = one(a, "value")
        attrs[d["string_table"][one(a, "key_strindex")]] = (
            one(v, "string_value") if "string_value" in v else one(v, "int_value"))
    names = []
    for li in d["stack_table"][one(s, "stack_index")]["location_indices"]:
        for line in d["location_table"][li].get("lines", []):
            f = d["function_table"][one(line, "function_index")]
            names.append(d["string_table"][one(f, "name_strindex")])
    return attrs, names


def main():
    recv, out, pid, func = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    mode = sys.argv[5] if len(sys.argv) > 5 else "cpu"
    got, found = [], False
    files = sorted(glob.glob(os.path.join(recv, "*.otlp.pb")))
    assert files, "no OTLP requests received"
    for f in files:
        body = open(f, "rb").read()
        meta = json.load(open(f[:-len(".otlp.pb")] + ".json"))
        assert meta["content_encoding"] == "gzip", meta
        raw = protoc(["--decode_raw"], body)
        assert re.search(r"^1 \{$", raw, re.M) and re.search(r"^2 \{$", raw, re.M), raw[:200]
        req = parse_text(protoc(["--proto_path=" + os.path.dirname(SUBSET),
                                 "--decode=" + REQUEST, SUBSET], body))
        d, profiles = check_request(req)
        times = {(one(p, "time_unix_nano"), one(p, "duration_nano")) for _, p in profiles}
        assert len(times) == 1, times
        t, dur = times.pop()
        assert dur > 0 and (t, t + dur) == (meta["from"], meta["until"]), (t, dur, meta)
        got.append((t, t + dur))
        for _, prof in profiles:
            for s in prof.get("samples", []):
                attrs, names = sample_view(d, s)
                if attrs.get("process.pid") == pid and func in names:
                    assert attrs.get("thread.id"), attrs
                    assert attrs.get("thread.name"), attrs
                    assert attrs.get("process.executable.name"), attrs
                    # The executable's absolute path (OTLP_EXE: the one expected).
                    path = attrs.get("process.executable.path", "")
                    assert path.startswith("/"), attrs
                    assert os.path.basename(path).startswith(
                        attrs["process.executable.name"][:15]), attrs
                    want = os.environ.get("OTLP_EXE")
                    assert not want or path == want, (path, want)
                    found = True
    if not found:
        sys.exit("no sample of process.pid %d with %s in its stack" % (pid, func))
    want = []
    for f in glob.glob(os.path.join(out, "*.%s.pb.gz" % mode)):
        t, dur = pr.pprof_times(open(f, "rb").read())
        want.append((t, t + dur))
    # OTLP_MISSING=K: K written profiles were refused on purpose; the others arrived once.
    missing = int(os.environ.get("OTLP_MISSING", "0"))
    rest = sorted(want)
    for g in got:
        if g not in rest:
            sys.exit("received %s twice or never written\nwritten %s" % (g, sorted(want)))
        rest.remove(g)
    if len(rest) != missing:
        sys.exit("not received: %s (expected %d missing)" % (rest, missing))
    print(len(got))


if __name__ == "__main__":
    main()
