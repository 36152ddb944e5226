#!/bin/sh
# run_mpi.sh ABI NP PROG [ARGS...]: run an MPI test program under the given
# MPI (mpich | openmpi), optionally through the rmampi helper.
#   RMAMPI        path of the rmampi helper; empty or unset: plain MPI
#   EXPECT_STATS  text the RMA_MPI_STATS line must contain, e.g.
#                 "windows 2 (librma 1, mpi 1)"; sets RMA_MPI_STATS=1
# Exports MPI_TEST_RMAMPI=1 to the programs when RMAMPI is set.
#   EXPECT_FAIL   non-empty: the job must end with a non-zero status (which
#                 then counts as success; 77 still means skipped)
#   EXPECT_STDERR text stderr must contain
#   RANK0_OWN_NETNS non-empty (mpich only): world rank 0 runs in a network
#                 namespace of its own (unshare -n; 77 if that cannot be
#                 done), another host to rmampi (lib/mpi/host.cpp) although
#                 host name and boot id are the same
# Exit status: the program's (77 = skipped passes through), or 1 when an
# expectation above is not met.
set -u
if [ $# -lt 3 ]; then
    echo "usage: $0 mpich|openmpi NP PROG [ARGS...]" >&2
    exit 2
fi
abi=$1 np=$2 prog=$3
shift 3

# Programs that check shim-only behaviour (mpi_passive_test, the window
# model) or tolerate a named plain-MPI bug look at this variable.
if [ -n "${RMAMPI:-}" ]; then
    export MPI_TEST_RMAMPI=1
else
    unset MPI_TEST_RMAMPI
fi

case $abi in
mpich)
    export MPIEXEC_TIMEOUT=60
    # Plain MPICH 4.0.2 (ch4) returns wrong RMA data between ranks of one
    # host unless every rank is treated as remote (docs/design/mpi-dropin.md §6.4).
    # Through rmampi MPICH's default stays unless the caller sets it (the
    # shim's host map does not depend on it: the *-rmampi-nolocal tests).
    if [ -z "${RMAMPI:-}" ]; then
        export MPIR_CVAR_NOLOCAL="${MPIR_CVAR_NOLOCAL:-1}"
    fi
    if [ -n "${RANK0_OWN_NETNS:-}" ]; then
        if ! unshare -n true 2>/dev/null; then
            echo "run_mpi.sh: RANK0_OWN_NETNS: unshare -n fails here (not root?): skipped" >&2
            exit 77
        fi
        set -- mpiexec.mpich -n 1 unshare -n ${RMAMPI:+"$RMAMPI"} "$prog" "$@" \
            : -n "$((np - 1))" ${RMAMPI:+"$RMAMPI"} "$prog" "$@"
    else
        set -- mpiexec.mpich -n "$np" ${RMAMPI:+"$RMAMPI"} "$prog" "$@"
    fi
    ;;
openmpi)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1
    set -- mpirun.openmpi --oversubscribe --timeout 60 -np "$np" ${RMAMPI:+"$RMAMPI"} "$prog" "$@"
    ;;
*)
    echo "$0: unknown ABI '$abi' (expected mpich or openmpi)" >&2
    exit 2
    ;;
esac

if [ -z "${EXPECT_STATS:-}${EXPECT_FAIL:-}${EXPECT_STDERR:-}" ]; then
    "$@"
    exit $?
fi

[ -n "${EXPECT_STATS:-}" ] && export RMA_MPI_STATS=1
errfile=$(mktemp "${TMPDIR:-/tmp}/run_mpi.XXXXXX") || exit 1
trap 'rm -f "$errfile"' EXIT
"$@" 2>"$errfile"
rc=$?
if [ "$rc" -eq 77 ]; then
    cat "$errfile" >&2
    exit 77
fi
if [ -n "${EXPECT_FAIL:-}" ]; then
    if [ "$rc" -eq 0 ]; then
        cat "$errfile" >&2
        echo "run_mpi.sh: expected a non-zero exit status, got 0" >&2
        exit 1
    fi
elif [ "$rc" -ne 0 ]; then
    cat "$errfile" >&2
    exit "$rc"
fi
if [ -n "${EXPECT_STDERR:-}" ] && ! grep -F -q -- "$EXPECT_STDERR" "$errfile"; then
    echo "run_mpi.sh: expected stderr to contain '$EXPECT_STDERR', got:" >&2
    cat "$errfile" >&2
    exit 1
fi
if [ -n "${EXPECT_STATS:-}" ] && ! grep "^librma-mpi: windows " "$errfile" | grep -F -q -- "$EXPECT_STATS"; then
    echo "run_mpi.sh: RMA_MPI_STATS: expected a line 'librma-mpi: windows ...' containing '$EXPECT_STATS', got:" >&2
    cat "$errfile" >&2
    exit 1
fi
cat "$errfile" >&2
exit 0
