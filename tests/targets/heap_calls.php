<?php
// -f firefox --calls --heap target (tests/e2e/test_trace_ff.sh), run with USE_ZEND_ALLOC=0 so
// that PHP's allocations go through malloc:
//   keep()  called once: 8 strings of 1 MiB, kept in a global until the end
//   churn() called 4 times: one string of 2 MiB each, freed when it returns
function keep()
{
    global $kept;
    for ($i = 0; $i < 8; $i++) {
        $kept[] = str_repeat(chr(65 + $i), 1 << 20);
    }
}

function churn($n)
{
    $s = str_repeat('z', 2 << 20);
    return strlen($s) + $n;
}

$kept = [];
keep();
$t = 0;
for ($i = 0; $i < 4; $i++) {
    $t += churn($i);
}
echo "$t\n";
