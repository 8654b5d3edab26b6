# -f svg flame graphs end to end, read back with python3's xml.etree (tests/e2e/svg_check.py:
# the geometry), xmllint (well-formed XML), go tool pprof (the values the widths stand for) and,
# where Debian's chromium is installed, a headless browser (the script runs without a console
# error, search and zoom work, the picture is not blank).

SVG_CT=build/targets/cpu_target
SVG_HT=build/targets/heap_target

svg_need() {
	command -v "$1" >/dev/null || fail "$1 is not installed (scripts/install-deps.sh test)"
}

# svg_check.py's line for NAME: "NAME WIDTH VALUE"; field 2 or 3.
svg_field() { # CHECK_OUTPUT NAME FIELD
	awk -v n="$2" -v k="$3" '$1 == n { print $k }' <<<"$1"
}

t_svg_cpu_split_widths() {
	local f=$E2E_TMP/cpu.svg out w3 w1 v3 v1
	svg_need xmllint
	"$PROF" --cpu=997 -f svg -o "$f" --top 0 -- "$SVG_CT" 2 || fail "exit status $?"
	xmllint --noout "$f" || fail "xmllint rejects $f"
	out=$(python3 tests/e2e/svg_check.py "$f" flame hot_three hot_one) || fail "$out"
	echo "$out"
	w3=$(svg_field "$out" hot_three 2) w1=$(svg_field "$out" hot_one 2)
	v3=$(svg_field "$out" hot_three 3) v1=$(svg_field "$out" hot_one 3)
	[ "$v1" -gt 0 ] || fail "no hot_one frame"
	# the target's 3:1 split, as test_cpu.sh reads it from pprof (how much CPU each half
	# gets depends on the machine's load)
	expect_range "hot_three/hot_one widths" 2.0 4.5 "$(awk -v a="$w3" -v b="$w1" 'BEGIN { print a / b }')"
	# widths in the ratio of the values, to the 4 decimals written
	expect_range "width ratio / value ratio" 0.9999 1.0001 \
		"$(awk -v a="$w3" -v b="$w1" -v c="$v3" -v d="$v1" 'BEGIN { printf "%.6f", (a / b) / (c / d) }')"
	# every value is whole samples of 1e9/997 ns
	expect_eq "frames whose value is not a multiple of the period" 0 \
		"$(grep -o 'data-v="[0-9]*"' "$f" | tr -dc '0-9\n' | awk '$1 % 1003009 != 0' | wc -l)"
	grep -q '>cpu profile: cpu (nanoseconds), total [0-9.]* s, [0-9.]* s<' "$f" || fail "title line"
	grep -q ">command: .*--cpu=997 -f svg -o $f --top 0 -- $SVG_CT 2<" "$f" || fail "command line"
	grep -Eq '>(no drops|drops: [a-z_]+=[1-9][0-9]*(, [a-z_]+=[1-9][0-9]*)*)(;|<)' "$f" || fail "drops line"
	# kernel frames (the getppid thread) coloured as kernel, the target's own as native
	grep -q 'data-k="kernel" data-p="f[0-9]*" data-v="[0-9]*" data-n="do_syscall_64"' "$f" ||
		fail "do_syscall_64 not a kernel frame"
	grep -q 'data-k="native" data-p="f[0-9]*" data-v="[0-9]*" data-n="hot_three"' "$f" ||
		fail "hot_three not a native frame"
	[ "$(stat -c %a "$f")" = 600 ] || fail "mode $(stat -c %a "$f"), not 600"
}

# Heap numbers are exact (tests/targets/heap_target.cc): the SVG of one run and the pprof
# profile of another agree to the byte, and the widths stand in the ratio pprof gives.
t_svg_heap_alloc_space_icicle_matches_pprof() {
	local f=$E2E_TMP/heap.svg pb=$E2E_TMP/heap.pb.gz out fn p_leak p_churn w_leak w_churn
	svg_need xmllint
	"$PROF" --heap -o "$pb" --top 0 -- "$SVG_HT" || fail "pprof run: exit status $?"
	"$PROF" --heap -f svg --svg-type alloc_space --icicle -o "$f" --top 0 -- "$SVG_HT" ||
		fail "svg run: exit status $?"
	xmllint --noout "$f" || fail "xmllint rejects $f"
	out=$(python3 tests/e2e/svg_check.py "$f" icicle leak_pages churn_small cxx_new_kept) || fail "$out"
	echo "$out"
	grep -q '>heap profile: alloc_space (bytes), total ' "$f" || fail "title: not alloc_space"
	for fn in leak_pages churn_small cxx_new_kept; do
		expect_eq "$fn alloc_space" "$(pprof_cum "$pb" alloc_space "$fn")" "$(svg_field "$out" "$fn" 3)"
	done
	p_leak=$(pprof_cum "$pb" alloc_space leak_pages) p_churn=$(pprof_cum "$pb" alloc_space churn_small)
	w_leak=$(svg_field "$out" leak_pages 2) w_churn=$(svg_field "$out" churn_small 2)
	expect_range "leak_pages/churn_small: svg widths / pprof values" 0.9999 1.0001 \
		"$(awk -v a="$w_leak" -v b="$w_churn" -v c="$p_leak" -v d="$p_churn" 'BEGIN { printf "%.6f", (a / b) / (c / d) }')"
	# nothing here is under 0.1 % of the total but the odd libc start-up allocation
	grep -q 'data-k="other"' "$f" && ! grep -q 'frames\? under 0.1% of the total merged into' "$f" &&
		fail "an other frame without its note"
	return 0
}

t_svg_two_modes_two_files() {
	local base=$E2E_TMP/both.svg m
	svg_need xmllint
	"$PROF" --heap --cpu -f svg -o "$base" --top 0 -- "$SVG_CT" 1 || fail "exit status $?"
	[ -e "$base" ] && fail "unsuffixed output written with two modes"
	for m in heap cpu; do
		xmllint --noout "$E2E_TMP/both.$m.svg" || fail "xmllint rejects both.$m.svg"
		grep -q ">$m profile: " "$E2E_TMP/both.$m.svg" || fail "both.$m.svg is not the $m graph"
	done
	grep -q '>heap profile: inuse_space (bytes)' "$E2E_TMP/both.heap.svg" || fail "heap's default type"
}

t_svg_bad_type_exit_2() {
	local rc=0
	"$PROF" --cpu -f svg --svg-type alloc_space -o "$E2E_TMP/x.svg" -- /bin/true \
		2>"$E2E_TMP/err" || rc=$?
	expect_eq "exit status" 2 "$rc"
	expect_eq "stderr lines" 1 "$(wc -l <"$E2E_TMP/err")"
	grep -q "unknown --svg-type 'alloc_space'" "$E2E_TMP/err" || fail "$(cat "$E2E_TMP/err")"
	[ -e "$E2E_TMP/x.svg" ] && fail "an SVG was written"
	return 0
}

# Chromium: loads the graph with no console message, the search finds hot_three's share (as
# svg_check.py computes it from the widths), a zoom widens a frame to the chart, and the
# screenshot has a picture in it.
t_svg_chromium_loads_searches_zooms() {
	local f=$E2E_TMP/chr.svg chrome out dom id want shot
	chrome=$(command -v chromium || true)
	[ -n "$chrome" ] || { echo "SKIP: Debian's chromium is not installed"; exit 77; }
	"$PROF" --cpu -f svg -o "$f" --top 0 -- "$SVG_CT" 2 || fail "exit status $?"
	out=$(python3 tests/e2e/svg_check.py "$f" flame hot_three main) || fail "$out"
	chr() { # ARGS... (its own profile directory: other tests may run one too)
		timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars \
			--user-data-dir="$E2E_TMP/chrome" --enable-logging=stderr --v=0 \
			--virtual-time-budget=3000 "$@"
	}
	chr --dump-dom "file://$f#s=%5Ehot_three%24" >"$E2E_TMP/dom1" 2>"$E2E_TMP/chr1.err" || fail "chromium exit status $?"
	! grep -F 'CONSOLE' "$E2E_TMP/chr1.err" || fail "console messages"
	want=$(awk '$1 == "hot_three" { printf "%.2f", 100 * $2 / 1180 }' <<<"$out")
	grep -q "id=\"matched\"[^>]*>Matched: $want%<" "$E2E_TMP/dom1" ||
		fail "search share: want $want%, got $(grep -o 'id="matched"[^<]*' "$E2E_TMP/dom1")"
	grep -c 'fill="rgb(230,0,230)"' "$E2E_TMP/dom1" | grep -qx '[1-9][0-9]*' || fail "no match highlighted"
	# zoom into main (the split's first frame of its own): it spans the chart
	id=$(grep -o 'id="f[0-9]*" data-d="[0-9]*" data-k="native" data-p="f[0-9]*" data-v="[0-9]*" data-n="main"' "$f" | head -1 | cut -d'"' -f2)
	[ -n "$id" ] || fail "no main frame"
	chr --dump-dom "file://$f#z=$id" >"$E2E_TMP/dom2" 2>"$E2E_TMP/chr2.err" || fail "chromium exit status $?"
	! grep -F 'CONSOLE' "$E2E_TMP/chr2.err" || fail "console messages"
	dom=$(tr '\n' ' ' <"$E2E_TMP/dom2" | grep -o "id=\"$id\"[^>]*><title>[^<]*</title><rect[^>]*>")
	grep -q 'x="10.0000"' <<<"$dom" || fail "zoomed main's x: $dom"
	grep -q 'width="1180.0000"' <<<"$dom" || fail "zoomed main's width: $dom"
	shot=$E2E_TMP/shot.png
	chr --window-size=1200,400 --screenshot="$shot" "file://$f" 2>"$E2E_TMP/chr3.err" || fail "chromium exit status $?"
	! grep -F 'CONSOLE' "$E2E_TMP/chr3.err" || fail "console messages"
	read -r colours share < <(python3 tests/e2e/svg_check.py --png "$shot")
	echo "screenshot: $colours colours, $share of the pixels not background"
	[ "$colours" -ge 20 ] || fail "screenshot has $colours colours"
	expect_range "screenshot's drawn share" 0.05 0.95 "$share"
}

# tests/targets/many_stacks.c: 131072 allocations of 24 bytes down a binary tree 17 levels
# deep, level() calling left() or right() calling level().  A left/right frame k levels down
# is worth 1/2^k of the tree: at k = 10 (1/1024, under 0.1 %) each level()'s two children
# become one "other" frame, 512 of them.
t_svg_large_profile_merges_narrow_frames() {
	local f=$E2E_TMP/many.svg out note
	svg_need xmllint
	"$PROF" --heap -f svg --svg-type alloc_objects -o "$f" --top 0 -- build/targets/many_stacks \
		>"$E2E_TMP/many.out" || fail "exit status $?"
	xmllint --noout "$f" || fail "xmllint rejects $f"
	out=$(python3 tests/e2e/svg_check.py "$f" flame level) || fail "$out"
	echo "$out"
	expect_eq "the tree's objects" 131072 "$(svg_field "$out" level 3)"
	expect_eq "other frames standing for 2 under level()" 512 \
		"$(python3 - "$f" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
gs = {g.get("id"): g for g in ET.parse(sys.argv[1]).getroot().iter(ns + "g") if g.get("class") == "f"}
print(sum(1 for g in gs.values() if g.get("data-k") == "other"
          and g.find(ns + "title").text.split("\n")[2] == "2 frames under the threshold"
          and gs[g.get("data-p")].get("data-n") == "level"))
PY
)"
	note=$(grep -o '[0-9]* frames under 0.1% of the total merged into "other"' "$f" | cut -d' ' -f1)
	[ -n "$note" ] || fail "no note of the merged frames"
	expect_range "frames merged (the note)" 1024 1100 "$note"
	[ "$(grep -c 'class="f"' "$f")" -lt 3000 ] || fail "$(grep -c 'class="f"' "$f") frames: nothing merged"
}

# --calls of tests/targets/calls.php (main once, Calc::alpha 100 times, Calc::beta 3 times per
# alpha, sleeper once) by call counts: exact cumulative values, interpreter frames with their
# file:line.
t_svg_php_calls_interpreter_frames() {
	local f=$E2E_TMP/calls.svg out fn
	svg_need xmllint
	svg_need php
	USE_ZEND_DTRACE=1 "$PROF" --calls -f svg --svg-type calls -o "$f" --top 0 -- php tests/targets/calls.php \
		>/dev/null || fail "exit status $?"
	xmllint --noout "$f" || fail "xmllint rejects $f"
	out=$(python3 tests/e2e/svg_check.py "$f" flame main Calc::alpha Calc::beta sleeper) || fail "$out"
	echo "$out"
	expect_eq "main (every call below it)" 402 "$(svg_field "$out" main 3)"
	expect_eq "Calc::alpha with its betas" 400 "$(svg_field "$out" Calc::alpha 3)"
	expect_eq "Calc::beta" 300 "$(svg_field "$out" Calc::beta 3)"
	expect_eq "sleeper" 1 "$(svg_field "$out" sleeper 3)"
	for fn in main Calc::alpha Calc::beta sleeper; do
		grep -q "data-k=\"interp\" data-p=\"f[0-9]*\" data-v=\"[0-9]*\" data-n=\"$fn\"" "$f" ||
			fail "$fn is not an interpreter frame"
	done
	grep -A2 '<title>Calc::beta$' "$f" | grep -q '^[^<]*/tests/targets/calls\.php:[0-9][0-9]*</title>' ||
		fail "no file:line in Calc::beta's title"
	grep -q '>calls profile: calls (count), total 402, ' "$f" || fail "title line"
}

# A server attached with -p frees what it allocates while attached (tests/targets/
# churn_server.c: 16 KiB in use, 4352 bytes allocated a request): its in-use picture would be
# empty, so alloc_space is drawn and the title says so; --svg-type inuse_space still draws it.
t_svg_heap_pid_server_draws_alloc_space() {
	local f=$E2E_TMP/server.svg g=$E2E_TMP/server_inuse.svg out=$E2E_TMP/server.out pid res
	svg_need xmllint
	build/targets/churn_server 30 >"$out" 2>&1 &
	pid=$!
	wait_for_line "$out" READY 10 || fail "churn_server never became ready"
	"$PROF" --heap -f svg -p "$pid" -d 2 -o "$f" --top 0 || fail "exit status $?"
	"$PROF" --heap -f svg --svg-type inuse_space -p "$pid" -d 1 -o "$g" --top 0 || fail "exit status $?"
	kill "$pid"
	wait "$pid" 2>/dev/null
	xmllint --noout "$f" || fail "xmllint rejects $f"
	grep -o '<text id="t0"[^<]*<' "$f"
	grep -q '>heap profile: alloc_space (bytes), total .*; drawn instead of inuse_space (.*, under 1% of it: freed while attached)<' "$f" ||
		fail "title does not say alloc_space is drawn instead of inuse_space"
	res=$(python3 tests/e2e/svg_check.py "$f" flame handle_request) || fail "$res"
	echo "$res"
	[ "$(svg_field "$res" handle_request 3)" -gt 1000000 ] || fail "handle_request under 1 MB allocated"
	grep -o '<text id="t2"[^<]*<' "$f" | grep -q 'unknown_frees' && fail "unknown_frees among the drops"
	grep -q '>heap profile: inuse_space (bytes), total ' "$g" || fail "--svg-type inuse_space not drawn"
	grep -q 'drawn instead' "$g" && fail "--svg-type inuse_space replaced"
	return 0
}
