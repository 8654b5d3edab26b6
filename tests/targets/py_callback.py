# Python target of tests/e2e/test_python.sh: C code calling back into Python, twice.  main()
# runs for SECONDS (argument, default 3): the first half it sorts with
# sorted(..., key=keyfn) — the builtin's C code (builtin_sorted, list.sort, in the interpreter)
# calls keyfn, which burns the CPU, once per element; the second half it sorts a ctypes array
# with libc's qsort and cmpfn as the comparison — a C extension (_ctypes), libffi and libc
# between main and cmpfn.  A stack of keyfn reads, root first: <module>, main, the interpreter's
# native call path and sorted's C frames, keyfn; one of cmpfn: <module>, main, the
# interpreter's call path into _ctypes, _ctypes, libffi, qsort_r, libffi, _ctypes, the
# interpreter's call path back, cmpfn.  CPython 3.6 and later.
import ctypes
import ctypes.util
import sys
import time

N = 200
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))


def keyfn(x):
    s = 0
    for i in range(300):
        s += i ^ x
    return s


def cmpfn(a, b):
    s = 0
    for i in range(100):
        s += i
    return a[0] - b[0]


def main(seconds):
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    cmp = CMP(cmpfn)
    arr = (ctypes.c_int * N)()
    rounds = 0
    start = time.monotonic()
    while time.monotonic() < start + seconds / 2:
        sorted(range(1000), key=keyfn)
        rounds += 1
    while time.monotonic() < start + seconds:
        arr[:] = range(N, 0, -1)
        libc.qsort(arr, N, ctypes.sizeof(ctypes.c_int), cmp)
        rounds += 1
    assert list(arr) == list(range(1, N + 1))
    print("rounds", rounds, flush=True)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3)
