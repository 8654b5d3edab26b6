# Code objects freed and their addresses taken by others of another name: each round compiles
# a function named alpha or beta in turn (through exec, as templating and dataclass-like code
# does), lets it allocate five blocks of its own size from libc (bytearray above pymalloc's
# 512 bytes: 1001 bytes from alpha, 3001 from beta), and drops it, so that its code object
# is freed before the next is made and the next usually lands at the same address.  Prints
# how many rounds found a code object at an address that last held the other name's.
import sys

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 2000


def main():
    kept = []
    last = {}  # address of a code object -> the name it last had
    reused = 0
    for i in range(ROUNDS):
        name, size = ("alpha", 1000) if i % 2 == 0 else ("beta", 3000)
        ns = {}
        exec(f"def {name}():\n    return bytearray({size})\n", ns)
        fn = ns[name]
        addr = id(fn.__code__)
        if last.get(addr, name) != name:
            reused += 1
        last[addr] = name
        for _ in range(5):
            kept.append(fn())
        del fn, ns
        if len(kept) > 200:
            del kept[:100]
    print("REUSED", reused)


main()
