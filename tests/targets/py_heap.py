# Python heap target (tests/e2e/test_python.sh): keep() holds 20 bytearrays of 1 MiB (each a
# malloc of 1 MiB + 1 byte, the interpreter's trailing NUL), main() prints KEPT, sleeps SECONDS
# (argument, default 0) and leaves with os._exit, so nothing is freed: 20 MiB in use on stacks
# through keep.  threading is imported (unused) so the main thread has a threading name,
# MainThread, for the thread_name label.  CPython 3.6 and later.
import os
import sys
import threading  # noqa: F401
import time


def keep(n):
    kept = []
    for _ in range(n):
        kept.append(bytearray(1 << 20))
    return kept


def main():
    held = keep(20)
    print("KEPT", len(held), flush=True)
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 0)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
