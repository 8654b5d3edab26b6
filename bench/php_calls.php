<?php
// `make bench`, section calls: N calls of an empty PHP function, timed by the script itself.
// Usage: php bench/php_calls.php N — prints READY, waits for a line on stdin (the gate: the
// profiler attaches meanwhile), makes the N calls, prints "ns_per_call X", then waits for a
// second line (or end of input) before exiting, so the profiler's statistics can be read.
function nothing($i)
{
    return $i;
}

$n = (int)($argv[1] ?? 2000000);
echo "READY\n";
fgets(STDIN);
$t = hrtime(true);
for ($i = 0; $i < $n; $i++) {
    nothing($i);
}
$t = hrtime(true) - $t;
printf("ns_per_call %.1f\n", $t / $n);
fgets(STDIN);
