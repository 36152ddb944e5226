#!/bin/sh
# SPDX-License-Identifier: MIT
#
# librma across two hosts (issue #14), side by side with the raw TCP round
# trip, iperf3 and MPICH over UCX TCP, on two network-namespace hosts joined
# by a veth link (tools/netns/rma-netns; root). Alternating rounds, medians:
#
#   bench/net_table.sh BUILD-DIR [ROUNDS]
#
# Rows (µs, lower is better; MB/s for bandwidth): the raw busy-polled 16-byte
# TCP round trip (bench/tcp_pingpong), librma's rmabench put/get/acc/fop/cas
# latency, lock, lock exclusive + put + unlock, fence, a truly passive
# target (librma only: MPICH cannot progress one) and put_bw/get_bw at 1 MiB
# (each run as a rank under
# mpirun.openmpi, 1 rank per host), MPICH's rmabench-mpich for the same tests
# (hydra with the harness's nsagent as its ssh, UCX_TLS=tcp) when it is built,
# and iperf3 when it is installed. Measure on a quiet machine: other spinning
# processes move every figure by up to 10x.
set -u
build=${1:?usage: bench/net_table.sh BUILD-DIR [ROUNDS]}
rounds=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
netns=$here/tools/netns/rma-netns
prefix=rmbench
tmp=${TMPDIR:-/tmp}
out=$tmp/$prefix-results
rm -rf "$out"; mkdir -p "$out"
"$netns" down $prefix >/dev/null 2>&1
"$netns" up --hosts 2 --prefix $prefix >/dev/null || exit 1
trap '"$netns" down $prefix >/dev/null 2>&1' EXIT INT TERM
. "$tmp/$prefix/env"
h1=${SUBNET%.0/24}.1
h2=${SUBNET%.0/24}.2
ns1=${prefix}1
ns2=${prefix}2
export RMA_NETNS_TIMEOUT=300

# value NAME VALUE: one measurement of one row
value() { echo "$2" >>"$out/$1"; }

# The median line of an rmabench table for size $2 (column 4: median).
rmabench_median() { awk -v s="$2" '$1 == s { print $4; exit }' "$1"; }

lat_tests="put_latency get_latency acc_latency fop_latency cas_latency"
r=0
while [ $r -lt "$rounds" ]; do
	r=$((r + 1))
	# raw TCP round trip
	ip netns exec $ns2 "$build/bench/tcp_pingpong" server 5555 16 &
	sleep 0.3
	raw=$(ip netns exec $ns1 "$build/bench/tcp_pingpong" client "$h2" 5555 16 20000 | sed 's/.*median \([0-9.]*\).*/\1/')
	wait
	value raw_rtt "$raw"
	# librma
	for t in $lat_tests lock fence; do
		"$netns" run $prefix -- -np 2 --map-by node --bind-to none "$build/tools/rmabench" $t --max-size 8 \
			>"$out/run.txt" 2>&1
		size=8
		{ [ $t = fence ] || [ $t = lock ]; } && size=0
		v=$(rmabench_median "$out/run.txt" $size)
		[ -n "$v" ] && value "librma_$t" "$v"
	done
	# lock exclusive + put + unlock; a truly passive target (it computes, never calling librma)
	"$netns" run $prefix -- -np 2 --map-by node --bind-to none "$build/tools/rmabench" put_latency \
		--sync lock --exclusive --max-size 8 >"$out/run.txt" 2>&1
	v=$(rmabench_median "$out/run.txt" 8)
	[ -n "$v" ] && value librma_lock_put "$v"
	"$netns" run $prefix -- -np 2 --map-by node --bind-to none "$build/tools/rmabench" passive --size 8 \
		>"$out/run.txt" 2>&1
	v=$(rmabench_median "$out/run.txt" 8)
	[ -n "$v" ] && value librma_passive "$v"
	for t in put_bw get_bw; do
		"$netns" run $prefix -- -np 2 --map-by node --bind-to none "$build/tools/rmabench" $t \
			--min-size 1048576 --max-size 1048576 >"$out/run.txt" 2>&1
		v=$(rmabench_median "$out/run.txt" 1048576)
		[ -n "$v" ] && value "librma_${t}_1m" "$v"
	done
	# MPICH over UCX TCP: hydra started inside host 1, the harness's nsagent as its ssh
	if [ -x "$build/tools/rmabench-mpich" ] && command -v mpiexec.mpich >/dev/null; then
		for t in $lat_tests lock fence put_bw get_bw; do
			args="--max-size 8"
			{ [ $t = put_bw ] || [ $t = get_bw ]; } && args="--min-size 1048576 --max-size 1048576"
			ip netns exec $ns1 unshare --uts sh -c "hostname $ns1; timeout 120 mpiexec.mpich -launcher ssh \
				-launcher-exec $tmp/$prefix/nsagent -hosts $h1,$h2 -iface eth0 -n 2 -ppn 1 \
				-genv UCX_TLS tcp -genv UCX_NET_DEVICES eth0 $build/tools/rmabench-mpich $t $args" \
				>"$out/run.txt" 2>&1
			size=8
			{ [ $t = fence ] || [ $t = lock ]; } && size=0
			{ [ $t = put_bw ] || [ $t = get_bw ]; } && size=1048576
			v=$(rmabench_median "$out/run.txt" $size)
			[ -n "$v" ] && value "mpich_$t" "$v"
		done
		ip netns exec $ns1 unshare --uts sh -c "hostname $ns1; timeout 120 mpiexec.mpich -launcher ssh \
			-launcher-exec $tmp/$prefix/nsagent -hosts $h1,$h2 -iface eth0 -n 2 -ppn 1 \
			-genv UCX_TLS tcp -genv UCX_NET_DEVICES eth0 $build/tools/rmabench-mpich put_latency \
			--sync lock --exclusive --max-size 8" >"$out/run.txt" 2>&1
		v=$(rmabench_median "$out/run.txt" 8)
		[ -n "$v" ] && value mpich_lock_put "$v"
	fi
	# iperf3
	if command -v iperf3 >/dev/null; then
		for len in 128K 1M; do
			ip netns exec $ns2 iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
			sleep 0.3
			bw=$(ip netns exec $ns1 iperf3 -c "$h2" -p 5201 -t 3 -l $len -f m 2>/dev/null |
				awk '/receiver/ { print $7 }')
			wait
			[ -n "$bw" ] && value "iperf3_MBps_l$len" "$(echo "$bw" | awk '{ printf "%.0f", $1 / 8 }')"
		done
	fi
done

echo "# librma across 2 namespace hosts (veth), $rounds alternating rounds, medians; $(uname -r)"
printf '%-26s %12s %s\n' "# row" "median" "all rounds"
for f in "$out"/*; do
	[ "$(basename "$f")" = run.txt ] && continue
	med=$(sort -g "$f" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	printf '%-26s %12s %s\n' "$(basename "$f")" "$med" "$(tr '\n' ' ' <"$f")"
done
