#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The OSU one-sided table of issue #13: the OSU micro-benchmarks, unmodified,
# under plain Open MPI (osc sm), Open MPI through rmampi, plain MPICH, and
# MPICH through rmampi. OSU is not packaged for Debian: build its one-sided
# tests with each MPI's mpicc yourself and point this at the binaries.
#
#   OSU_MPICH=DIR OSU_OPENMPI=DIR bench/osu_table.sh BUILDDIR [ROUNDS]
#
# DIR holds osu_put_latency, osu_get_latency, osu_acc_latency,
# osu_fop_latency, osu_cas_latency, osu_put_bw, osu_get_bw of OSU 5.x (each
# run prints every size; OSU 7's per-iteration timer calls put a ~50 ns floor
# under its latencies). Rounds alternate the four configurations, so a noisy
# stretch hits all alike; each cell is the median over the rounds (us for
# latencies, MB/s for bandwidths). Prints a markdown table.
set -u
build=${1:?usage: OSU_MPICH=DIR OSU_OPENMPI=DIR $0 BUILDDIR [ROUNDS]}
rounds=${2:-3}
rmampi=$(realpath "$build")/tools/rmampi
: "${OSU_MPICH:?the directory of OSU built with mpicc.mpich}" "${OSU_OPENMPI:?the directory of OSU built with mpicc.openmpi}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# run CONFIG TEST SIZE: the figure OSU prints for SIZE ("nan" if the run failed).
run() {
	local cfg=$1 test=$2 size=$3 dir wrap=()
	local -a launch
	case $cfg in
	ompi | ompi+rmampi)
		dir=$OSU_OPENMPI
		launch=(timeout 120 mpirun.openmpi -np 2 --bind-to core --mca osc sm) ;;
	mpich | mpich+rmampi)
		dir=$OSU_MPICH
		launch=(env MPIEXEC_TIMEOUT=120 mpiexec.mpich -n 2 -bind-to core) ;;
	esac
	[[ $cfg == *+rmampi ]] && wrap=("$rmampi")
	local v
	v=$("${launch[@]}" "${wrap[@]}" "$dir/osu_$test" -w allocate 2>/dev/null | awk -v m="$size" '$1 == m { print $2 }')
	echo "${v:-nan}"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

tests="put_latency:8 get_latency:8 acc_latency:8 fop_latency:8 cas_latency:8 put_bw:65536 get_bw:65536 put_bw:1048576 get_bw:1048576"
configs="ompi ompi+rmampi mpich mpich+rmampi"
declare -A values
for ((r = 1; r <= rounds; r++)); do
	for tm in $tests; do
		for c in $configs; do
			values[$tm,$c]+="$(run "$c" "${tm%%:*}" "${tm##*:}") "
		done
	done
done
echo "| OSU test (size) | Open MPI osc/sm | Open MPI + rmampi | MPICH | MPICH + rmampi |"
echo "| --- | --- | --- | --- | --- |"
for tm in $tests; do
	printf '| %s (%s B) |' "${tm%%:*}" "${tm##*:}"
	for c in $configs; do
		printf ' %s |' "$(echo "${values[$tm,$c]}" | median)"
	done
	echo
done
