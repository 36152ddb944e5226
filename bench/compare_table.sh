#!/usr/bin/env bash
# The README's librma-vs-MPI tables, regenerated: every row is a
# `rmabench compare --alternate N --stat median` run (medians of N
# alternating rounds of librma, Open MPI osc/sm and MPICH), printed as
# markdown rows: test | size | librma | Open MPI | ratio | MPICH | ratio.
#
#   bash bench/compare_table.sh [BUILD_DIR]      (ROUNDS=5 by default; MPIS=openmpi,mpich)
#   ONLY='latency|fence' bash bench/compare_table.sh   only the rows whose rmabench arguments match
#
# Needs the MPI backends built (tools/setup bench installs both MPIs).
# Run it on a quiet machine: anything else spinning moves these figures.
set -euo pipefail
build=${1:-build}
rounds=${ROUNDS:-5}
mpis=${MPIS:-openmpi,mpich}
bench="$build/tools/rmabench"
[ -x "$bench" ] || { echo "compare_table.sh: $bench is not built" >&2; exit 1; }

# label|rmabench test and options
cases=(
	"put|put_latency --size 8 --iterations 20000"
	"get|get_latency --size 8 --iterations 20000"
	"accumulate int32 SUM|acc_latency --sizes 8,64,1024,65536 --iterations 2000"
	"get_accumulate|get_acc_latency --size 8 --iterations 20000"
	"fetch_and_op int64 SUM|fop_latency --iterations 20000"
	"compare_and_swap int64|cas_latency --iterations 20000"
	"lock exclusive + put + unlock|put_latency --sync lock --exclusive --size 8 --iterations 20000"
	"empty fence|fence --iterations 20000"
	"put + fence|put_latency --sync fence --size 8 --iterations 20000"
	"put bandwidth (MB/s)|put_bw --sizes 65536,1048576,4194304"
	"get bandwidth (MB/s)|get_bw --sizes 65536,1048576,4194304"
	"window allocate + free (us)|win_create --iterations 5"
)

echo "| test | size | librma | Open MPI | ratio | MPICH | ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for c in "${cases[@]}"; do
	label=${c%%|*}
	args=${c#*|}
	[[ -z ${ONLY:-} || $args =~ ${ONLY:-} ]] || continue
	# shellcheck disable=SC2086 # the options are words on purpose
	csv=$("$bench" compare --mpi "$mpis" --alternate "$rounds" --stat median --format csv $args)
	awk -F, -v label="$label" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		{
			o = ("openmpi" in col) ? $col["openmpi"] : "-"
			ro = ("librma_over_openmpi" in col) ? sprintf("%.2f", $col["librma_over_openmpi"]) : "-"
			m = ("mpich" in col) ? $col["mpich"] : "-"
			rm = ("librma_over_mpich" in col) ? sprintf("%.3g", $col["librma_over_mpich"]) : "-"
			printf "| %s | %s | %s | %s | %s | %s | %s |\n", label, $col["size"], $col["librma"], o, ro, m, rm
		}' <<<"$csv"
done
