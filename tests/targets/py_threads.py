# Python threads target (tests/e2e/test_python.sh): a thread named "sleeper" sleeps in nap()
# (time.sleep releases the GIL) while the main thread spins in Spinner.spin() holding it.
#   py_threads.py [NAP_SECONDS [SPIN_SECONDS]]   (default 2 and 2.5)
import sys
import threading
import time


def nap(seconds):
    time.sleep(seconds)


class Spinner:
    # a method: its frames are named Spinner.spin on 3.11+ (co_qualname), spin before
    def spin(self, seconds):
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:
            n += 1
        return n


def main():
    nap_s = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    spin_s = float(sys.argv[2]) if len(sys.argv) > 2 else 2.5
    t = threading.Thread(target=nap, args=(nap_s,), name="sleeper")
    t.start()
    Spinner().spin(spin_s)
    t.join()
    print("done", flush=True)


if __name__ == "__main__":
    main()
