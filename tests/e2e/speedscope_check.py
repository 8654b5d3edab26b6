#!/usr/bin/env python3
"""A -f chrome trace opened in the real speedscope (npm), in headless Chromium (tests/e2e/test_trace.sh).

  speedscope_check.py SPEEDSCOPE_DIR TRACE WORKDIR

SPEEDSCOPE_DIR is the npm package's dist/release (index.html and its scripts).  Serves it and the
trace from the loopback (127.0.0.1, a free port, for this run only), loads
index.html#profileURL=…&view=sandwich in Chromium (--dump-dom once the page is idle) and reads
the sandwich table speedscope drew.  Exits 1 when Chromium fails or draws no table twice
(what the failed attempt printed goes first, after "attempt N:").  Prints:
  import KIND                how speedscope read the file (its console: "Importing as KIND")
  alert TEXT                 what it said it could not read (an alert, sent to the console)
  sandwich NAME TOTAL SELF   each row: the function and its total and self share of the
                             profile's non-idle time, in percent (the bar widths it drew)
"""
import functools
import http.server
import os
import re
import signal
import subprocess
import sys
import threading
from html.parser import HTMLParser


def fail(msg):
    print("BAD: " + msg)
    sys.exit(1)


class Rows(HTMLParser):
    """The sandwich table's rows: <tr><td>total<div style="width: P%"></td><td>self…</td>
    <td>…name</td></tr>."""

    def __init__(self):
        super().__init__()
        self.rows, self.row, self.cell = [], None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr":
            self.row = []
        elif tag == "td" and self.row is not None:
            self.cell = {"text": "", "width": None}
            self.row.append(self.cell)
        elif tag == "div" and self.cell is not None and self.cell["width"] is None:
            m = re.search(r"width:\s*([0-9.]+)%", a.get("style") or "")
            if m:
                self.cell["width"] = float(m.group(1))

    def handle_endtag(self, tag):
        if tag == "td":
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if len(self.row) == 3 and self.row[0]["width"] is not None:
                self.rows.append(self.row)
            self.row = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell["text"] += data


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def draw(base, profile_dir):
    """Chromium's DOM of the sandwich view: (why it failed or None, dom, console)."""
    chrome = subprocess.Popen(
        # No connection of its own: this machine's closed network refuses them, many at a
        # time, and each start's lookups of Google's hosts can hold the page.
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-default-apps",
         "--user-data-dir=" + profile_dir, "--enable-logging=stderr", "--v=0",
         "--window-size=1280,3000", "--virtual-time-budget=15000", "--dump-dom",
         f"{base}/index.html#profileURL={base}/trace.json&view=sandwich"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        dom, err = chrome.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(chrome.pid, signal.SIGKILL)  # its renderers with it
        dom, err = chrome.communicate()
        return "chromium did not finish in 60 s", dom, err
    if chrome.returncode:
        return f"chromium exit status {chrome.returncode}", dom, err
    return None, dom, err


def main(release, trace, work):
    site = os.path.join(work, "site")
    os.makedirs(site, exist_ok=True)
    for name in os.listdir(release):
        if name != "index.html":
            os.symlink(os.path.join(release, name), os.path.join(site, name))
    # speedscope says a file it cannot read in an alert(), which would hold the headless page
    # until the timeout: on the console instead, where the error is read back.
    page = open(os.path.join(release, "index.html")).read()
    if "<head>" not in page:
        fail("speedscope's index.html has no <head>")
    with open(os.path.join(site, "index.html"), "w") as f:
        f.write(page.replace("<head>", "<head><script>window.alert = m => "
                             "console.error('speedscope alert: ' + m)</script>", 1))
    os.symlink(os.path.abspath(trace), os.path.join(site, "trace.json"))
    handler = functools.partial(Quiet, directory=site)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        # A browser on a loaded machine now and then gives up on the page: once more, with
        # what the first attempt printed kept.
        for attempt in (1, 2):
            why, dom, err = draw(base, os.path.join(work, f"chrome{attempt}"))
            p = Rows()
            if not why:
                p.feed(dom)
                if not p.rows:
                    why = "speedscope drew no sandwich table"
            if not why:
                break
            print(f"attempt {attempt}: {why}")
            # what it did instead: its console, and the page's text
            print(err[-1500:])
            print(re.sub(r"\s+", " ", re.sub(r"<[^>]*>", " ", dom))[:500])
        else:
            fail(why)
    finally:
        server.shutdown()
    for m in re.finditer(r'"Importing as ([^"]+)"', err):
        print("import", m.group(1))
    for m in re.finditer(r'"(speedscope alert: [^"]*)"', err):
        print("alert", m.group(1)[len("speedscope alert: "):])
    for total, self_, name in p.rows:
        print("sandwich", name["text"].strip(), f"{total['width']:.2f}", f"{self_['width']:.2f}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
