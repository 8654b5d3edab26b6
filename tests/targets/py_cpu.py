#!/usr/bin/env python3
# Python CPU target (tests/e2e/test_python.sh, bench/python_bench.sh): main() calls hot_a and
# hot_b in turn; hot_a runs the same loop as hot_b three times as long, so on-CPU samples fall
# 3:1 on them (every number stays one 30-bit digit: the same cost per iteration in both).
# Runs on CPython 3.6 and later.
#   py_cpu.py [--wait] [SECONDS]   (default 3; --wait: print "READY pid", read a line first)
#   py_cpu.py --depth N [SECONDS]  recurse N Python frames deep, then loop in leaf() (bench)
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
    depth = 0
    if args and args[0] == "--wait":
        args = args[1:]
        print("READY", os.getpid(), flush=True)
        sys.stdin.readline()
    if args and args[0] == "--depth":
        depth = int(args[1])
        args = args[2:]
    seconds = float(args[0]) if args else 3.0
    end = time.monotonic() + seconds
    if depth > 0:
        down(depth, end)
        return
    rounds = 0
    while time.monotonic() < end:
        hot_a(20000)
        hot_b(20000)
        rounds += 1
    print("rounds", rounds)


if __name__ == "__main__":
    main()
