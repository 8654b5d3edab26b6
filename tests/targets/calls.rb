# --calls target (tests/e2e/test_calls.sh), for Debian's ruby 3.1 (C methods only):
#   Integer#times  8 calls: 1 outer, 7 inner (called from the outer's block)
#   Integer#gcd    35 calls, each from an inner Integer#times
#   Integer#lcm    12 calls, from Array#each
7.times { |i| 5.times { |j| i.gcd(j) } }
[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].each { |k| k.lcm(3) }
