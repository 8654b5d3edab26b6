#!/usr/bin/env python3
"""A stand-in for Grafana Pyroscope, Parca and an OTLP profiles receiver, written from their
protocol descriptions (shared/notes/continuous.md; OTLP: opentelemetry-proto v1.11.0 and the
OTLP/HTTP specification), Python 3 standard library only.

    push_receiver.py DIR [--refuse]

Binds 127.0.0.1 on a free port, prints the port on stdout (one line), and serves:
  POST /push.v1.PusherService/Push   Pyroscope Connect, application/proto PushRequest
  POST /ingest?name=APP{k=v,...}&from=&until=&format=pprof   Pyroscope ingest, body = pprof
  POST /api/profiles/writeraw        Parca grpc-gateway JSON WriteRawRequest
  POST /v1development/profiles       OTLP/HTTP, application/x-protobuf ExportProfilesServiceRequest
                                     (gzip or not); stored uncompressed as DIR/NNNNNN.otlp.pb
Every profile accepted is stored as DIR/NNNNNN.pb.gz with DIR/NNNNNN.json beside it:
{endpoint, name (__name__), labels, from, until (Unix ns), id, authorization, tenant,
content_type, content_encoding}; from/until come from the query on /ingest, from the first
Profile's time_unix_nano and duration_nano on OTLP and from the pprof's time_nanos and
duration_nanos otherwise.  DIR/requests.log gets one JSON line per request: path, status, t (Unix seconds).

Misbehaviour, set by lines on stdin (or --refuse at start):
  listen          start accepting connections (until then connecting is refused)
  fail STATUS N   answer the next N requests with STATUS (e.g. 500, 429, 400)
  stall N         read the next N requests and never answer them
  retry_after S   send "Retry-After: S" with the fails
  partial R N     answer the next N OTLP requests 200 with a partial_success rejecting R
  ok              forget pending fails, stalls and partial successes
  quit            exit
"""
import base64
import gzip
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse

lock = threading.Lock()
state = {"fail": [], "stall": 0, "seq": 0, "retry_after": None, "partial": []}
stop = threading.Event()
outdir = None


# ---- a protobuf wire-format reader: just enough for PushRequest and profile.proto ----

def varint(buf, i):
    v = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def fields(buf):
    """Yields (field number, wire type, value): ints for varints, bytes for length-delimited."""
    i = 0
    while i < len(buf):
        tag, i = varint(buf, i)
        num, wire = tag >> 3, tag & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            if i + n > len(buf):
                raise ValueError("truncated field")
            v, i = buf[i:i + n], i + n
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wire)
        yield num, wire, v


def pprof_times(raw):
    """(time_nanos, duration_nanos) of a (possibly gzipped) pprof; raises if it is not one."""
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    t = d = 0
    nsamples = 0
    for num, wire, v in fields(data):
        if num == 9 and wire == 0:
            t = v
        elif num == 10 and wire == 0:
            d = v
        elif num == 2:
            nsamples += 1
    if nsamples == 0:
        raise ValueError("pprof without samples")
    return t, d


def ingest_time(s):
    """/ingest's from/until: Unix seconds, or ms / µs / ns by their number of digits."""
    v = int(s)
    digits = len(s.lstrip("-"))
    if digits >= 19:
        return v
    if digits >= 16:
        return v * 1000
    if digits >= 13:
        return v * 1000000
    return v * 1000000000


class Bad(Exception):
    pass


SUBSET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "otlp",
                      "profiles_subset.proto")


def otlp_partial(rejected, msg):
    """An ExportProfilesServiceResponse with a partial_success, encoded by protoc."""
    text = 'partial_success { rejected_profiles: %d error_message: "%s" }' % (rejected, msg)
    return subprocess.run(
        ["protoc", "--proto_path=" + os.path.dirname(SUBSET), "--encode=opentelemetry.proto."
         "collector.profiles.v1development.ExportProfilesServiceResponse", SUBSET],
        input=text.encode(), capture_output=True, check=True).stdout


def otlp_summary(body):
    """(service names, time_unix_nano, duration_nano) of a request; raises if it is not one."""
    services, times = [], []
    dictionary = 0
    for num, wire, v in fields(body):
        if num == 2 and wire == 2:
            dictionary += 1
        if num != 1 or wire != 2:
            continue
        for rnum, rwire, rv in fields(v):
            if rnum == 1 and rwire == 2:
                for anum, awire, kv in fields(rv):
                    d = {n: x for n, w, x in fields(kv) if w == 2} if anum == 1 else {}
                    if d.get(1) == b"service.name":
                        sv = {n: x for n, w, x in fields(d.get(2, b""))}
                        services.append(sv.get(1, b"").decode())
            elif rnum == 2 and rwire == 2:
                for snum, swire, prof in fields(rv):
                    if snum != 2:
                        continue
                    t = d_ = 0
                    for pnum, pwire, pv in fields(prof):
                        if pnum == 3 and pwire == 1:
                            t = int.from_bytes(pv, "little")
                        elif pnum == 4 and pwire == 0:
                            d_ = pv
                    times.append((t, d_))
    if dictionary != 1 or not services or not times:
        raise Bad("not an ExportProfilesServiceRequest with a dictionary and profiles")
    if len(set(times)) != 1:
        raise Bad("profiles of one request with different times: %s" % times)
    return services, times[0][0], times[0][1]


def store(handler, endpoint, raw, name, labels, frm, until, ident="", ext=".pb.gz"):
    with lock:
        state["seq"] += 1
        n = state["seq"]
    base = os.path.join(outdir, "%06d" % n)
    with open(base + ext, "wb") as f:
        f.write(raw)
    meta = {
        "endpoint": endpoint,
        "name": name,
        "labels": labels,
        "from": frm,
        "until": until,
        "id": ident,
        "authorization": handler.headers.get("Authorization", ""),
        "tenant": handler.headers.get("X-Scope-OrgID", ""),
        "content_type": handler.headers.get("Content-Type", ""),
        "content_encoding": handler.headers.get("Content-Encoding", ""),
    }
    with open(base + ".json.tmp", "w") as f:
        json.dump(meta, f, sort_keys=True)
    os.rename(base + ".json.tmp", base + ".json")


def handle_push(h, body):
    if h.headers.get("Content-Type", "") != "application/proto":
        raise Bad("content type must be application/proto")
    profiles = []
    for num, wire, series in fields(body):
        if num != 1 or wire != 2:
            continue
        labels, samples = {}, []
        for snum, swire, v in fields(series):
            if snum == 1 and swire == 2:
                lp = {n: x for n, w, x in fields(v) if w == 2}
                labels[lp.get(1, b"").decode()] = lp.get(2, b"").decode()
            elif snum == 2 and swire == 2:
                rs = {n: x for n, w, x in fields(v) if w == 2}
                samples.append((rs.get(1, b""), rs.get(2, b"").decode()))
        if not labels.get("service_name") or not labels.get("__name__"):
            raise Bad("series without service_name or __name__")
        for raw, ident in samples:
            t, d = pprof_times(raw)
            profiles.append((raw, labels, t, t + d, ident))
    if not profiles:
        raise Bad("no profiles")
    for raw, labels, frm, until, ident in profiles:
        name = labels.get("__name__")
        store(h, "push", raw, name, labels, frm, until, ident)


def handle_ingest(h, query, body):
    q = urllib.parse.parse_qs(query, keep_blank_values=True)
    if q.get("format", [""])[0] != "pprof":
        raise Bad("format must be pprof")
    name = q.get("name", [""])[0]
    if "{" in name:
        app, rest = name.split("{", 1)
        if not rest.endswith("}"):
            raise Bad("bad name")
        pairs = [p for p in rest[:-1].split(",") if p]
    else:
        app, pairs = name, []
    if not app:
        raise Bad("no application name")
    labels = {"service_name": app}
    for p in pairs:
        if "=" not in p:
            raise Bad("bad label %r" % p)
        k, v = p.split("=", 1)
        labels[k] = v
    frm = ingest_time(q["from"][0])
    until = ingest_time(q["until"][0])
    pprof_times(body)
    store(h, "ingest", body, labels.get("__name__"), labels, frm, until)


def handle_parca(h, body):
    req = json.loads(body)
    n = 0
    for series in req.get("series", []):
        labels = {lp["name"]: lp["value"] for lp in series["labels"]["labels"]}
        if not labels.get("__name__"):
            raise Bad("series without __name__")
        for s in series.get("samples", []):
            raw = base64.b64decode(s.get("rawProfile") or s.get("raw_profile"), validate=True)
            t, d = pprof_times(raw)
            store(h, "parca", raw, labels["__name__"], labels, t, t + d)
            n += 1
    if not n:
        raise Bad("no profiles")


def handle_otlp(h, body):
    if h.headers.get("Content-Type", "") != "application/x-protobuf":
        raise Bad("content type must be application/x-protobuf")
    if h.headers.get("Content-Encoding", "") == "gzip":
        body = gzip.decompress(body)
    services, t, d = otlp_summary(body)
    store(h, "otlp", body, None, {"service_name": ",".join(services)}, t, t + d, ext=".otlp.pb")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, msg, ctype="text/plain"):
        data = msg.encode() if isinstance(msg, str) else msg
        # Logged before the answer: a test that reads the log once the profiler has its answer
        # must find the line there.
        with lock, open(os.path.join(outdir, "requests.log"), "a") as f:
            f.write(json.dumps({"path": self.path.split("?")[0], "t": time.time(),
                                "status": status}) + "\n")
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if status >= 400 and state["retry_after"] is not None:
            self.send_header("Retry-After", state["retry_after"])
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        with lock:
            fail = state["fail"].pop(0) if state["fail"] else None
            stall = state["stall"] > 0
            if stall:
                state["stall"] -= 1
        if stall:
            with lock, open(os.path.join(outdir, "requests.log"), "a") as f:
                f.write(json.dumps({"path": self.path.split("?")[0], "status": 0}) + "\n")
            stop.wait()
            self.close_connection = True
            return
        if fail is not None:
            self.answer(fail, "receiver told to fail with %d\nsecond line" % fail)
            return
        path, _, query = self.path.partition("?")
        try:
            if path == "/push.v1.PusherService/Push":
                handle_push(self, body)
            elif path == "/ingest":
                handle_ingest(self, query, body)
            elif path == "/api/profiles/writeraw":
                handle_parca(self, body)
            elif path == "/v1development/profiles":
                handle_otlp(self, body)
                with lock:
                    partial = state["partial"].pop(0) if state["partial"] else None
                reply = otlp_partial(partial, "receiver told to reject %d" % partial) if partial else b""
                self.answer(200, reply, "application/x-protobuf")
                return
            else:
                self.answer(404, "no such endpoint")
                return
        except (Bad, ValueError, KeyError, TypeError, OSError) as e:
            self.answer(400, "bad request: %s" % e)
            return
        self.answer(200, "{}")


def main():
    global outdir
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
    srv.daemon_threads = True
    srv.server_bind()
    listening = "--refuse" not in sys.argv[2:]

    def serve():
        srv.serve_forever(poll_interval=0.05)

    # Listening before the port is printed: a client told the port never meets a refusal.
    if listening:
        srv.server_activate()
        threading.Thread(target=serve, daemon=True).start()
    print(srv.server_address[1], flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        with lock:
            if words[0] == "listen" and not listening:
                listening = True
                srv.server_activate()
                threading.Thread(target=serve, daemon=True).start()
            elif words[0] == "fail":
                state["fail"] += [int(words[1])] * int(words[2])
            elif words[0] == "stall":
                state["stall"] = int(words[1])
            elif words[0] == "retry_after":
                state["retry_after"] = words[1]
            elif words[0] == "partial":
                state["partial"] += [int(words[1])] * int(words[2])
            elif words[0] == "ok":
                state["fail"] = []
                state["stall"] = 0
                state["partial"] = []
            elif words[0] == "quit":
                break
        print("done " + words[0], flush=True)
    stop.set()


if __name__ == "__main__":
    main()
