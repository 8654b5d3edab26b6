<?php
// tests/targets/live_blocks.c for -f firefox (tests/e2e/test_caps.sh), run with
// USE_ZEND_DTRACE=1 (its calls) and USE_ZEND_ALLOC=0 (its strings from malloc): prints
// "READY pid" and waits for a line on stdin; then keep_blocks makes N strings of 64 KiB (each a
// malloc of 65,561 bytes), free_blocks frees them all, keep_again makes M more and keeps them;
// prints "DONE" and waits for another line.  The array holding them, and each function's
// run-time cache (allocated at its first call, kept), are made before READY, so after it
// nothing else stays allocated.
//
// Usage: php live_blocks.php N M
function keep_blocks($n)
{
    global $blocks;
    for ($i = 0; $i < $n; $i++) {
        $blocks[$i] = str_repeat('x', 65536);
    }
}

function free_blocks($n)
{
    global $blocks;
    for ($i = 0; $i < $n; $i++) {
        $blocks[$i] = null;
    }
}

function keep_again($m)
{
    global $blocks;
    for ($i = 0; $i < $m; $i++) {
        $blocks[$i] = str_repeat('y', 65536);
    }
}

$n = (int)$argv[1];
$m = (int)$argv[2];
$blocks = array_fill(0, max($n, $m, 1), null);
keep_blocks(0);
free_blocks(0);
keep_again(0);
echo "READY " . getmypid() . "\n";
fgets(STDIN);
keep_blocks($n);
free_blocks($n);
keep_again($m);
echo "DONE\n";
fgets(STDIN);
