# Deep Python stacks (tests/e2e/test_deep.sh): main() calls down(DEPTH), which recurses DEPTH
# levels (DEPTH Python frames named down) and, at the bottom, keeps 5 bytearrays of 1 MiB (each
# a malloc of 1 MiB + 1 byte).  Prints "KEPT DEPTH" and leaves with os._exit: nothing is freed.
# With "sleep", the bottom sleeps 5 times 100 ms (time.sleep: periods off the CPU for --offcpu)
# instead, and it prints "SLEPT DEPTH 5".
#
#   python3 py_deep.py DEPTH [sleep]
import os
import sys
import time


def down(n, sleep):
    if n > 1:
        return down(n - 1, sleep)
    if sleep:
        for _ in range(5):
            time.sleep(0.1)
        return [None] * 5
    return [bytearray(1 << 20) for _ in range(5)]


def main():
    depth = int(sys.argv[1])
    sleep = sys.argv[2:] == ["sleep"]
    sys.setrecursionlimit(depth + 100)
    kept = down(depth, sleep)
    print("SLEPT" if sleep else "KEPT", depth, len(kept), flush=True)
    os._exit(0)


main()
