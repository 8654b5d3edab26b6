# -f codetracer's hostile target (tests/e2e/test_codetracer.sh): names each path given as the
# source file of a function it then calls — compile() takes any filename, and CPython's probes
# report it as the function's file.  The profiler must open each only as this process could.
#   named_0, named_1, …: one call each, in argv's order
import sys

for i, path in enumerate(sys.argv[1:]):
    ns = {}
    exec(compile("def named_%d():\n    return %d\n" % (i, i), path, "exec"), ns)
    ns["named_%d" % i]()
print(len(sys.argv) - 1)
