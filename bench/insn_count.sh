#!/usr/bin/env bash
# Instructions per operation on librma's hot paths, counted by callgrind.
#
#   bash bench/insn_count.sh [BUILD_DIR]           2 ranks through rmarun, rank 0 counted
#   RANKS=1 bash bench/insn_count.sh [BUILD_DIR]   one rank, target = self
#   FORMAT=csv bash bench/insn_count.sh ...         case,instructions_per_op
#   PROG=build/bench/mpi_insn_count-mpich RANKS=1 bash bench/insn_count.sh build
#                                                   the MPI drop-in vs rma_* (bench/mpi_insn_count.cpp)
#
# Each case is a dump that bench/insn_count.cpp takes around kIters
# iterations; the figure is the dump's Ir total divided by the iterations,
# so it holds everything the calls execute, library and libc alike.
set -euo pipefail
build=${1:-build}
ranks=${RANKS:-2}
format=${FORMAT:-table}
iters=2000 # kIters in insn_count.cpp and mpi_insn_count.cpp
prog=${PROG:-$build/bench/insn_count}
[ -x "$prog" ] || { echo "insn_count.sh: $prog is not built (ninja -C $build ${prog#$build/})" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "insn_count.sh: valgrind is missing (apt-get install valgrind)" >&2; exit 1; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# No progress thread: its polling would be counted in rank 0's totals.
export RMA_PROGRESS=${RMA_PROGRESS:-none}
vg=(valgrind --tool=callgrind --collect-atstart=no --dump-instr=no "--callgrind-out-file=$out/cg.%p")
if [ "$ranks" = 1 ]; then
	"${vg[@]}" "$prog" >"$out/log" 2>&1 || { cat "$out/log" >&2; exit 1; }
else
	"$build/tools/rmarun" -n "$ranks" --timeout 600 "${vg[@]}" "$prog" >"$out/log" 2>&1 ||
		{ cat "$out/log" >&2; exit 1; }
fi

# Every dump file names its trigger ("desc: Trigger: Client Request: NAME")
# and its total ("summary:" or "totals:" with Ir first).
[ "$format" = csv ] && echo "case,instructions_per_op"
[ "$format" = table ] && printf '%-24s %12s\n' case "insn/op"
for f in $(ls -v "$out"/cg.*); do
	name=$(sed -n 's/^desc: Trigger: Client Request: //p' "$f")
	[ -n "$name" ] || continue
	total=$(awk '/^(summary|totals):/ {print $2; exit}' "$f")
	per=$(awk -v t="$total" -v n="$iters" 'BEGIN {printf "%.1f", t / n}')
	echo "$name $per"
done | while read -r name per; do
	if [ "$format" = csv ]; then echo "$name,$per"; else printf '%-24s %12s\n' "$name" "$per"; fi
done
