# Deep Python stacks (tests/e2e/test_deep.sh): main() calls down(DEPTH), which recurses DEPTH
# levels (DEPTH Python frames named down) and, at the bottom, keeps 5 bytearrays of 1 MiB (each
# a malloc of 1 MiB + 1 byte).  Prints "KEPT DEPTH" and leaves with os._exit: nothing is freed.
#
#   python3 py_deep.py DEPTH
import os
import sys


def down(n):
    if n > 1:
        return down(n - 1)
    return [bytearray(1 << 20) for _ in range(5)]


def main():
    depth = int(sys.argv[1])
    sys.setrecursionlimit(depth + 100)
    kept = down(depth)
    print("KEPT", depth, len(kept), flush=True)
    os._exit(0)


main()
