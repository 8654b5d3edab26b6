#!/usr/bin/env python3
"""Independent reader of our -f svg flame graphs (xml.etree only).

Usage: svg_check.py FILE flame|icicle [NAME...]
       svg_check.py --png SHOT.png   (a screenshot: "COLOURS SHARE", its distinct colours and
                                      the share of pixels unlike the top-left one)
Checks the geometry: the root spans the chart; every frame's width is its value's share of the
chart (to the 4 decimals written); every child lies inside its parent, one level further from
the root (below it in an icicle, above it in a flame graph); siblings do not overlap.  Then
prints, per NAME, "NAME WIDTH VALUE": the summed widths and values of the outermost frames of
that name (a recursive function counted once)."""
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

NS = "{http://www.w3.org/2000/svg}"
CHART, MARGIN, LEVEL = 1180.0, 10.0, 16.0
EPS = 0.002  # two rounding steps of the 4 decimals written


def fail(msg):
    print("svg_check: " + msg)
    sys.exit(1)


def main():
    path, layout, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    root = ET.parse(path).getroot()
    if root.tag != NS + "svg":
        fail("root element is %s" % root.tag)
    frames = {}
    order = []
    for g in root.iter(NS + "g"):
        if g.get("class") != "f":
            continue
        rect, title = g.find(NS + "rect"), g.find(NS + "title")
        if rect is None or title is None:
            fail("frame %s without rect or title" % g.get("id"))
        f = {
            "id": g.get("id"), "parent": g.get("data-p"), "depth": int(g.get("data-d")),
            "value": int(g.get("data-v")), "name": g.get("data-n"),
            "x": float(rect.get("x")) - MARGIN, "w": float(rect.get("width")),
            "y": float(rect.get("y")), "title": title.text.split("\n"),
        }
        if f["title"][0] != f["name"]:
            fail("title %r does not start with the name %r" % (f["title"][0], f["name"]))
        frames[f["id"]] = f
        order.append(f)
    if not order:
        fail("no frames")
    top = order[0]
    if top["parent"] is not None or top["name"] != "all" or top["depth"] != 0:
        fail("the first frame is not the root")
    if abs(top["x"]) > EPS or abs(top["w"] - CHART) > EPS:
        fail("the root does not span the chart: x %s width %s" % (top["x"], top["w"]))
    total = top["value"]
    kids = {}
    for f in order[1:]:
        p = frames.get(f["parent"])
        if p is None:
            fail("%s: no parent %s" % (f["id"], f["parent"]))
        want = f["value"] * CHART / total
        if abs(f["w"] - want) > EPS:
            fail("%s (%s): width %s, its value says %s" % (f["id"], f["name"], f["w"], want))
        if f["w"] > p["w"] + EPS or f["value"] > p["value"]:
            fail("%s (%s) wider than its parent %s" % (f["id"], f["name"], p["name"]))
        if f["x"] < p["x"] - EPS or f["x"] + f["w"] > p["x"] + p["w"] + EPS:
            fail("%s (%s) outside its parent %s" % (f["id"], f["name"], p["name"]))
        if f["depth"] != p["depth"] + 1:
            fail("%s: depth %d under depth %d" % (f["id"], f["depth"], p["depth"]))
        step = LEVEL if layout == "icicle" else -LEVEL
        if abs(f["y"] - (p["y"] + step)) > EPS:
            fail("%s: y %s, parent's %s (%s)" % (f["id"], f["y"], p["y"], layout))
        kids.setdefault(p["id"], []).append(f)
    for pid, ks in kids.items():
        ks.sort(key=lambda k: k["x"])
        for a, b in zip(ks, ks[1:]):
            if a["x"] + a["w"] > b["x"] + EPS:
                fail("siblings %s and %s overlap" % (a["name"], b["name"]))
        if sum(k["value"] for k in ks) > frames[pid]["value"]:
            fail("children of %s worth more than it" % frames[pid]["name"])
    print("frames %d total %d" % (len(order), total))
    for name in names:
        w = v = 0
        for f in order:
            a, nested = frames.get(f["parent"]), False
            while a is not None:
                nested = nested or a["name"] == name
                a = frames.get(a["parent"])
            if f["name"] == name and not nested:
                w += f["w"]
                v += f["value"]
        print("%s %.4f %d" % (name, w, v))


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def png_pixels(path):
    """RGB(A) 8-bit non-interlaced PNG (what Chromium writes) -> rows of pixel tuples."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s is not a PNG" % path)
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        fail("PNG kind not read here: depth %d colour type %d" % (depth, ctype))
    bpp = 3 if ctype == 2 else 4
    raw, stride, prev, rows, i = zlib.decompress(idat), w * bpp, bytearray(w * bpp), [], 0
    for _ in range(h):
        ft, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            line[x] = (line[x] + (0, a, b, (a + b) // 2, paeth(a, b, c))[ft]) & 0xff
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return rows


def png_main(path):
    rows = png_pixels(path)
    bg = rows[0][0]
    px = [p for r in rows for p in r]
    print("%d %.4f" % (len(set(px)), sum(p != bg for p in px) / len(px)))


if __name__ == "__main__":
    if sys.argv[1] == "--png":
        png_main(sys.argv[2])
    else:
        main()
