<?php
// --calls busy/idle target (tests/e2e/test_calls.sh): each function once, from the script.
//   spinner  spins on the CPU for 300 ms (wall) in spin_ms, never sleeps
//   napper   sleeps 300 ms (usleep), barely on the CPU
//   both     spins 200 ms in spin_ms, then sleeps 200 ms
// Prints the CPU time (µs, getrusage) each spin_ms call got, "spinner CPU_US" and
// "both CPU_US", then "done": on a busy machine a spinner is preempted, and its busy time is
// that CPU time, not its wall time.
function cpu_us()
{
    $r = getrusage();
    return $r["ru_utime.tv_sec"] * 1000000 + $r["ru_utime.tv_usec"]
        + $r["ru_stime.tv_sec"] * 1000000 + $r["ru_stime.tv_usec"];
}

function spin_ms($ms)
{
    $end = hrtime(true) + $ms * 1000000;
    $n = 0;
    while (hrtime(true) < $end) {
        $n++;
    }
    return $n;
}

function spinner()
{
    $t = cpu_us();
    spin_ms(300);
    echo "spinner " . (cpu_us() - $t) . "\n";
}

function napper()
{
    usleep(300000);
}

function both()
{
    $t = cpu_us();
    spin_ms(200);
    echo "both " . (cpu_us() - $t) . "\n";
    usleep(200000);
}

spinner();
napper();
both();
echo "done\n";
