<?php
// -f firefox markers (tests/e2e/test_trace_ff.sh): exactly 25 MarkerTestError thrown and
// caught, by one catch clause of that class (PHP fires exception__caught at every catch clause
// it tries).  With the argument "wait": first prints "READY <pid>" and waits for a line on
// stdin (a profiler attaches with -p meanwhile).
class MarkerTestError extends Exception {}

function thrower(int $i): int
{
	throw new MarkerTestError("marker test $i");
}

if (($argv[1] ?? '') === 'wait') {
	echo "READY ", getmypid(), "\n";
	fgets(STDIN);
}
$caught = 0;
for ($i = 0; $i < 25; $i++) {
	try {
		thrower($i);
	} catch (MarkerTestError $e) {
		$caught++;
	}
}
echo $caught, "\n";
