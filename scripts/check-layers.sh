#!/bin/bash
# The layers of user/ (DESIGN.md §3) call only downwards: a file in one folder includes headers of
# its own folder or of folders below it, never above.  Prints each violation; exit 1 if any.
set -u
order=(util proc sym unwind attach track agg profile export trace cmd)
rank() {
	local i
	for i in "${!order[@]}"; do
		[ "${order[$i]}" = "$1" ] && { echo "$i"; return; }
	done
	echo ${#order[@]} # user/ itself: the top (main, cli, session, report)
}
bad=0
cd "$(dirname "$0")/.." || exit 1
for f in user/*.c user/*.h user/*/*.c user/*/*.h; do
	dir=$(dirname "$f")
	[ "$dir" = user ] && own=top || own=${dir#user/}
	r=$(rank "$own")
	while IFS= read -r inc; do
		case "$inc" in
		*/*) d=${inc%%/*} ;;
		*) d=top ;;
		esac
		[ -f "user/$inc" ] || continue # include/ and system headers
		if [ "$(rank "$d")" -gt "$r" ]; then
			echo "$f includes $inc (a higher layer)"
			bad=1
		fi
	done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done
exit $bad
