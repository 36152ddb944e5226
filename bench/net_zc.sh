#!/bin/sh
# SPDX-License-Identifier: MIT
#
# What zero-copy sends (RMA_NET_ZC, io_uring SEND_ZC) do to the get
# bandwidth across two hosts (issue #14): rmabench get_bw between two
# network-namespace hosts on a veth link (tools/netns/rma-netns; root), one
# rank on each, RMA_NET_ZC=on, off and auto in rotating order every round,
# medians:
#
#   bench/net_zc.sh BUILD-DIR [ROUNDS] [SIZE]
#
# SIZE defaults to 1048576 (bytes per get; the reply leaves as one send of
# the server's queue). Each run's figure is rmabench's median MB/s; the
# server's RMA_VERBOSE line (zero-copy sends, reported copies) of the last
# run of each mode is kept in $TMPDIR/rzcbench-results/MODE.verbose.
set -u
build=${1:?usage: bench/net_zc.sh BUILD-DIR [ROUNDS] [SIZE]}
rounds=${2:-5}
size=${3:-1048576}
here=$(cd "$(dirname "$0")/.." && pwd)
netns=$here/tools/netns/rma-netns
prefix=rzcbench
tmp=${TMPDIR:-/tmp}
out=$tmp/$prefix-results
rm -rf "$out"; mkdir -p "$out"
"$netns" down $prefix >/dev/null 2>&1
"$netns" up --hosts 2 --prefix $prefix >/dev/null || exit 1
trap '"$netns" down $prefix >/dev/null 2>&1' EXIT INT TERM

r=0
while [ $r -lt "$rounds" ]; do
	case $((r % 3)) in
	0) order="on off auto" ;;
	1) order="off auto on" ;;
	*) order="auto on off" ;;
	esac
	r=$((r + 1))
	for mode in $order; do
		"$netns" run $prefix -- -np 2 --map-by node --bind-to none -x RMA_NET_ZC="$mode" -x RMA_VERBOSE=1 \
			"$build/tools/rmabench" get_bw --min-size "$size" --max-size "$size" >"$out/run.txt" 2>&1
		v=$(awk -v s="$size" '$1 == s { print $4; exit }' "$out/run.txt")
		[ -n "$v" ] && echo "$v" >>"$out/$mode"
		grep "rank 1's server" "$out/run.txt" >"$out/$mode.verbose"
	done
done

echo "# get_bw $size B across 2 namespace hosts (veth), $rounds rounds, MB/s; $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %10s %s\n' "# zc" "median" "all rounds"
for mode in on off auto; do
	[ -f "$out/$mode" ] || continue
	med=$(sort -g "$out/$mode" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	printf '%-6s %10s %s\n' "$mode" "$med" "$(tr '\n' ' ' <"$out/$mode")"
done
for mode in on off auto; do
	[ -f "$out/$mode.verbose" ] && sed "s/^/# $mode: /" "$out/$mode.verbose"
done
