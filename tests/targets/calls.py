# --calls target (tests/e2e/test_calls.sh), for Debian's /usr/bin/python3.11:
#   f called exactly 1500 times: 1000 from a Python loop, 500 from C (map)
#   g called exactly once
def f(x):
    return x + 1


def g(n):
    s = 0
    for i in range(n):
        s += f(i)
    return s


g(1000)
print(sum(map(f, range(500))))
