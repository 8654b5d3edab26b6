# Python target of tests/e2e/test_python.sh: a C function calling back into Python.  main()
# sorts with sorted(..., key=keyfn) for SECONDS (argument, default 3): the builtin's C code
# (builtin_sorted, list.sort) calls keyfn, which burns the CPU, once per element.  A stack of
# keyfn reads, root first: <module>, main, the interpreter's native call path, sorted's C
# frames, keyfn.  CPython 3.6 and later.
import sys
import time


def keyfn(x):
    s = 0
    for i in range(300):
        s += i ^ x
    return s


def main(seconds):
    rounds = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sorted(range(1000), key=keyfn)
        rounds += 1
    print("rounds", rounds, flush=True)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3)
