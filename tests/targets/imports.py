# -f firefox import markers (tests/e2e/test_trace_ff.sh): imports the modules the test wrote into
# the directory argv[1] (ffmk_a, ffmk_b which imports ffmk_c, ffmk_d), each once, and fails to
# import ffmk_missing once.
import sys

sys.path.insert(0, sys.argv[1])
import ffmk_a  # noqa: E402
import ffmk_b  # noqa: E402
import ffmk_d  # noqa: E402

try:
    import ffmk_missing  # noqa: F401
except ImportError:
    pass
print(ffmk_a.NAME, ffmk_b.NAME, ffmk_b.ffmk_c.NAME, ffmk_d.NAME)
