# Python threads whose first sample comes at the end of their lives (tests/e2e/test_python.sh):
# each sleeps from its start (no cpu sample), then works briefly and ends, while the main thread
# waits in join (so no GIL wait gives the thread an earlier off-CPU moment either).  A profiler
# that reads a thread's threading name only when it first sees the thread reads it after the
# thread has left threading._active.
#   py_late_threads.py [THREADS]   (default 6), threads named late0, late1, …
import sys
import threading
import time


def work():
    time.sleep(0.3)
    end = time.monotonic() + 0.03
    while time.monotonic() < end:
        pass


def main():
    for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 6):
        t = threading.Thread(target=work, name="late%d" % i)
        t.start()
        t.join()


if __name__ == "__main__":
    main()
