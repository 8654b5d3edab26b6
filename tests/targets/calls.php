<?php
// --calls target (tests/e2e/test_calls.sh): exactly known calls.
//   Calc::alpha  called ALPHA_N (100) times from the main script
//   Calc::beta   called BETA_M (3) times by each alpha: 300 calls, caller Calc::alpha
//   sleeper      called once, sleeps 200 ms (usleep is internal: its time is sleeper's own)
// With argument "loop": runs alpha/beta forever (10 ms pauses) for -p attach tests,
// printing "READY pid" first.
class Calc
{
    public function alpha($i)
    {
        $s = 0;
        for ($j = 0; $j < 3; $j++) {
            $s += $this->beta($j);
        }
        return $s + $i;
    }

    public function beta($j)
    {
        return $j * 2;
    }
}

function sleeper()
{
    usleep(200000);
}

function forever(Calc $c)
{
    for (;;) {
        for ($i = 0; $i < 10; $i++) {
            $c->alpha($i);
        }
        usleep(10000);
    }
}

$c = new Calc();
if (($argv[1] ?? '') === 'loop') {
    echo "READY " . getmypid() . "\n";
    forever($c);
}
$t = 0;
for ($i = 0; $i < 100; $i++) {
    $t += $c->alpha($i);
}
sleeper();
echo "$t\n";
