# Two Python functions allocating in bursts from one native stack (tests/e2e/test_python.sh,
# t_python_heap_walk_cache_reads_python_frames): from 3.11 a Python call adds no C frame, so
# a() and b() reach malloc with the same return address, stack and frame pointers.  The walk
# cache (bpf/unwind.bpf.h) may hand the native frames back, but the Python frames above them
# must be read anew every time.  After a 1 s sleep (the profiler builds the tables of a
# launched command in the background), 40 rounds of 25 bytearrays of 100,000 bytes from a() and
# 25 of 200,000 from b(), each freed at once.  Prints "DONE".
import time


def a():
    return bytearray(100000)


def b():
    return bytearray(200000)


def main():
    time.sleep(1)
    for _ in range(40):
        for _ in range(25):
            a()
        for _ in range(25):
            b()
    print("DONE")


main()
