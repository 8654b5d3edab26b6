#!/usr/bin/env python3
"""Compares tests/otlp/profiles_subset.proto with opentelemetry-proto's own files, field by
field (message, name, number, type), with protoc alone:

    compare_upstream.py OPENTELEMETRY_PROTO_CHECKOUT   # at tag v1.11.0

Every field of the subset must be upstream's; upstream fields the subset leaves out are listed
(they are ones we never send).  Not part of the e2e run: it needs the upstream checkout.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SERVICE = "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto"


def fields(include, proto, imports):
    ds = subprocess.run(["protoc", "-I" + include, "--descriptor_set_out=/dev/stdout"] +
                        (["--include_imports"] if imports else []) + [proto],
                        capture_output=True, check=True).stdout
    text = subprocess.run(["protoc", "-I/usr/include", "--decode=google.protobuf.FileDescriptorSet",
                           "google/protobuf/descriptor.proto"], input=ds, capture_output=True,
                          check=True).stdout.decode()
    out, depth, msg, cur = set(), 0, None, {}
    for line in text.splitlines():
        s = line.strip()
        if s.endswith("{"):
            depth += 1
            if s == "field {":
                cur = {}
        elif s == "}":
            depth -= 1
            if "name" in cur and "number" in cur:
                out.add((msg, cur["name"], int(cur["number"]), cur.get("type")))
            cur = {}
        elif ":" in s:
            k, v = s.split(":", 1)
            v = v.strip().strip('"')
            if depth == 2 and k == "name":
                msg = v
            elif depth == 3:
                cur[k] = v
    return out


def main():
    up = fields(sys.argv[1], os.path.join(sys.argv[1], SERVICE), True)
    sub = fields(HERE, os.path.join(HERE, "profiles_subset.proto"), False)
    bad = sorted(sub - up)
    for f in sorted(up - sub):
        print("left out: %s.%s = %d (%s)" % f)
    if bad:
        sys.exit("not upstream's: %s" % bad)
    print("ok: %d fields, each upstream's" % len(sub))


if __name__ == "__main__":
    main()
