#!/usr/bin/env python3
# Python CPU target (tests/e2e/test_python.sh, bench/python_bench.sh): main() calls hot_a and
# hot_b in turn; hot_a runs the same loop as hot_b three times as long, so on-CPU samples fall
# 3:1 on them (every number stays one 30-bit digit: the same cost per iteration in both).
# Runs on CPython 3.6 and later.
#   py_cpu.py [--wait] [--rounds N] [--depth N] [SECONDS]
# runs SECONDS (default 3), or N rounds of hot_a + hot_b if that comes first; --depth N: recurse
# N Python frames deep and loop in leaf() instead (bench/python_bench.sh).  --wait: print
# "READY pid" and read a line first; at the end print "done" and read stdin to its end.
import os
import sys
import time


def hot_a(n):
    s = 0
    for i in range(3 * n):
        s += i % 7 + 1
    return s


def hot_b(n):
    s = 0
    for i in range(n):
        s += i % 7 + 1
    return s


def leaf(end):
    n = 0
    while time.monotonic() < end:
        n += hot_b(2000)
    return n


def down(depth, end):
    if depth <= 1:
        return leaf(end)
    return down(depth - 1, end)


def main():
    args = sys.argv[1:]
    wait = depth = rounds = 0
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--wait":
            wait = 1
        elif opt == "--depth":
            depth = int(args.pop(0))
        elif opt == "--rounds":
            rounds = int(args.pop(0))
        else:
            sys.exit("py_cpu.py: unknown option " + opt)
    seconds = float(args[0]) if args else 3.0
    if wait:
        print("READY", os.getpid(), flush=True)
        sys.stdin.readline()
    end = time.monotonic() + seconds
    n = 0
    seed = 1
    if depth > 0:
        down(depth, end)
    # Each round's length is drawn anew (10,000 to 30,000 iterations of hot_b, 20,000 on
    # average; the same sequence every run): rounds of one length (5.53 ms on 3.12 here, within
    # 1 % of 5/3 of the 3.34 ms period at 299 Hz) can beat against the sampling period, and CI
    # once saw hot_a/hot_b at 5.6 on 3.12.
    while depth == 0 and time.monotonic() < end and (rounds == 0 or n < rounds):
        seed = (seed * 1103515245 + 12345) % 2147483648
        k = 10000 + (seed >> 8) % 20000
        hot_a(k)
        hot_b(k)
        n += 1
    print("rounds", n, flush=True)
    if wait:
        # held here until the harness has read what it measures and closes our stdin
        print("done", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
