#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Unmodified MPI programs across two simulated hosts through rmampi, with
# librma's TCP transport serving the windows that span them
# (RMA_MPI_ENGINE=librma; issues #13 and #14). Plain Open MPI 4.1 cannot
# even create such a window (its one-sided component refuses it).
#
#   across_hosts.sh RMA-NETNS RMAMPI PROGRAM:RANKS:STATS...
#
# Brings up two namespace hosts (tools/netns/rma-netns), runs each PROGRAM
# with RANKS ranks spread over them under rmampi, and checks that it printed
# PASS and the shim's stats line STATS; takes the hosts down. Exit 77 (skip)
# when the harness cannot run here (not root, no mpirun.openmpi, no netns).
set -u
netns=$1
rmampi=$2
shift 2
prefix=rmmpi$(($$ % 1000))x
"$netns" down $prefix >/dev/null 2>&1
"$netns" up --hosts 2 --prefix $prefix >/dev/null 2>&1
rc=$?
[ $rc = 77 ] && { echo "skipped: the namespace harness cannot run here"; exit 77; }
[ $rc = 0 ] || { echo "rma-netns up failed ($rc)"; exit 1; }
trap '"$netns" down $prefix >/dev/null 2>&1' EXIT INT TERM
export RMA_NETNS_TIMEOUT=90
status=0
for spec in "$@"; do
	prog=${spec%%:*}
	rest=${spec#*:}
	ranks=${rest%%:*}
	stats=${rest#*:}
	out=$("$netns" run $prefix -- -np "$ranks" -x RMA_MPI_ENGINE=librma -x RMA_MPI_STATS=1 \
		"$rmampi" "$prog" 2>&1)
	if echo "$out" | grep -q "PASS" && echo "$out" | grep -qF "librma-mpi: $stats"; then
		echo "ok: $(basename "$prog") on $ranks ranks over 2 hosts: $stats"
	else
		echo "FAILED: $(basename "$prog") on $ranks ranks over 2 hosts, expected PASS and '$stats':"
		echo "$out" | tail -20
		status=1
	fi
done
exit $status
