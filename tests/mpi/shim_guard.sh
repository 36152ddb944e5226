#!/bin/sh
# shim_guard.sh LIBDIR RMAMPI MPICH_PROG OPENMPI_PROG
#
# The refusals of design §2.2, each a status of 127 and one line:
#  - a program of one MPI with the other MPI's shim preloaded (the shim's
#    own load-time guard, no rmampi involved), both ways;
#  - rmampi under the launcher of the other MPI;
#  - rmampi on a program that loads no MPI.
set -u
libdir=$1
rmampi=$2
mpich_prog=$3
openmpi_prog=$4
failures=0

# expect STATUS TEXT CMD...: CMD must exit with STATUS and print TEXT on stderr.
expect() {
	want=$1
	text=$2
	shift 2
	err=$("$@" 2>&1 >/dev/null)
	rc=$?
	if [ "$rc" -ne "$want" ] || ! printf '%s\n' "$err" | grep -qF -- "$text"; then
		echo "shim_guard.sh: FAIL: $*: status $rc (want $want), stderr: $err" >&2
		failures=$((failures + 1))
	else
		echo "shim_guard.sh: ok: $* -> $rc: $(printf '%s\n' "$err" | grep -F -- "$text" | head -1)"
	fi
}

expect 127 "also loads libmpi.so" env LD_PRELOAD="$libdir/librmampi-mpich.so" "$openmpi_prog"
expect 127 "also loads libmpich.so" env LD_PRELOAD="$libdir/librmampi-openmpi.so" "$mpich_prog"
# Hydra's environment, as a rank of mpiexec.mpich sees it, around an Open MPI program.
expect 127 "started by the mpich launcher: use mpirun.openmpi" env PMI_RANK=0 PMI_FD=3 \
	RMAMPI_LIBDIR="$libdir" "$rmampi" "$openmpi_prog"
expect 127 "started by the openmpi launcher: use mpiexec.mpich" env OMPI_COMM_WORLD_RANK=0 \
	RMAMPI_LIBDIR="$libdir" "$rmampi" "$mpich_prog"
expect 127 "linked against neither" "$rmampi" /bin/true
expect 127 "RMAMPI_ABI=foo" env RMAMPI_ABI=foo "$rmampi" /bin/true
[ "$failures" -eq 0 ]
