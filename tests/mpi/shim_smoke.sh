#!/bin/sh
# shim_smoke.sh ABI RMAMPI PROGRAM LIBRMA_WINDOWS [NP]
#
# Runs tests/mpi/shim_smoke.c through rmampi under ABI's launcher with
# RMA_MPI_STATS=1, and checks that it passed, that the shim printed the
# statistics line the program expects, and that librma served exactly
# LIBRMA_WINDOWS of its windows (3 by default; 0 with RMA_MPI_ENGINE=mpi).
# RMAMPI "-": run PROGRAM as it is (linked ahead of the MPI with -lrmampi-ABI).
set -u
abi=$1
rmampi=$2
prog=$3
want_librma=$4
np=${5:-2}
if [ "$rmampi" = - ]; then
	set --
else
	set -- "$rmampi"
fi
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

export RMA_MPI_STATS=1
export RMA_MPI_ENGINE=${RMA_MPI_ENGINE:-auto}
case $abi in
mpich)
	# MPICH as it comes: no MPIR_CVAR_NOLOCAL=1 (design §6.4). The shim's
	# host map does not depend on it; the *-mpich-rmampi-nolocal
	# conformance runs (meson.build) cover it.
	MPIEXEC_TIMEOUT=60 mpiexec.mpich -n "$np" "$@" "$prog" >"$out" 2>"$err"
	rc=$?
	;;
openmpi)
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
		mpirun.openmpi --oversubscribe --timeout 60 -np "$np" -x RMA_MPI_STATS -x RMA_MPI_ENGINE \
		"$@" "$prog" >"$out" 2>"$err"
	rc=$?
	;;
*)
	echo "shim_smoke.sh: unknown ABI $abi" >&2
	exit 2
	;;
esac
cat "$out"
cat "$err" >&2

fail() {
	echo "shim_smoke.sh: FAIL: $*" >&2
	exit 1
}
[ "$rc" -eq 0 ] || fail "the job exited with status $rc"
grep -q '^shim_smoke: ok' "$out" || fail "the program did not report success"
expect=$(sed -n 's/^expect: //p' "$out")
[ -n "$expect" ] || fail "the program printed no expected statistics line"
grep -qxF "$expect" "$err" || fail "stderr lacks the statistics line \"$expect\""
case $expect in
*"(librma $want_librma,"*) ;;
*) fail "librma served the wrong number of windows: \"$expect\", want librma $want_librma" ;;
esac
echo "shim_smoke.sh: ok ($abi, $np ranks): $expect"
