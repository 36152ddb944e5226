/* SPDX-License-Identifier: MIT */
/*
 * Errors (docs/design/mpi-dropin.md §4.6): librma's classes become the MPI
 * classes of the same name; each raise uses a dynamic code of that class
 * carrying librma's text, and goes through the program's error handler on
 * its own handle (the shadow window, or the communicator of a creation call).
 */
#include "shim.h"

#include <cstdio>
#include <cstring>
#include <map>

namespace rmampi {

namespace {

#define RMAMPI_CLASS(x) \
	case RMA_ERR_##x: \
		return MPI_ERR_##x

int classOf(int rmaClass)
{
	switch (rmaClass) {
	case RMA_SUCCESS:
		return MPI_SUCCESS;
		RMAMPI_CLASS(BUFFER);
		RMAMPI_CLASS(COUNT);
		RMAMPI_CLASS(TYPE);
		RMAMPI_CLASS(TAG);
		RMAMPI_CLASS(COMM);
		RMAMPI_CLASS(RANK);
		RMAMPI_CLASS(REQUEST);
		RMAMPI_CLASS(GROUP);
		RMAMPI_CLASS(OP);
		RMAMPI_CLASS(ARG);
		RMAMPI_CLASS(UNKNOWN);
		RMAMPI_CLASS(TRUNCATE);
		RMAMPI_CLASS(OTHER);
		RMAMPI_CLASS(INTERN);
		RMAMPI_CLASS(PENDING);
		RMAMPI_CLASS(BASE);
		RMAMPI_CLASS(INFO);
		RMAMPI_CLASS(INFO_KEY);
		RMAMPI_CLASS(INFO_NOKEY);
		RMAMPI_CLASS(INFO_VALUE);
		RMAMPI_CLASS(KEYVAL);
		RMAMPI_CLASS(NO_MEM);
		RMAMPI_CLASS(WIN);
		RMAMPI_CLASS(SIZE);
		RMAMPI_CLASS(DISP);
		RMAMPI_CLASS(LOCKTYPE);
		RMAMPI_CLASS(ASSERT);
		RMAMPI_CLASS(RMA_CONFLICT);
		RMAMPI_CLASS(RMA_SYNC);
		RMAMPI_CLASS(RMA_RANGE);
		RMAMPI_CLASS(RMA_ATTACH);
		RMAMPI_CLASS(RMA_SHARED);
		RMAMPI_CLASS(RMA_FLAVOR);
	case RMA_ERR_PROC_FAILED:
#ifdef MPIX_ERR_PROC_FAILED
		return MPIX_ERR_PROC_FAILED;
#else
		return MPI_ERR_OTHER;
#endif
	case RMA_ERR_NOT_SUPPORTED: /* no MPI class of that name in MPI 3.1/4.0 headers */
	default:
		return MPI_ERR_OTHER;
	}
}

#undef RMAMPI_CLASS

/* Per MPI class, a ring of dynamic codes; per code, the text the shim gave it. */
constexpr int kRing = 8;
struct Ring {
	int codes[kRing] = {};
	int made = 0;
	int next = 0;
};
std::mutex errMutex;
std::map<int, Ring> rings;
std::map<int, std::string> texts;

} /* namespace */

int mpiClassOf(int rmaCode)
{
	int cls = RMA_ERR_OTHER;
	if (rma_error_class(rmaCode, &cls) != RMA_SUCCESS)
		cls = RMA_ERR_OTHER;
	return classOf(cls);
}

int mpiCodeWithText(int mpiClass, const char *text)
{
	std::lock_guard<std::mutex> g(errMutex);
	Ring &r = rings[mpiClass];
	int slot = r.next;
	r.next = (r.next + 1) % kRing;
	if (slot >= r.made) {
		int code = mpiClass;
		if (PMPI_Add_error_code(mpiClass, &code) != MPI_SUCCESS)
			return mpiClass; /* out of codes: the class itself, with MPI's generic text */
		r.codes[slot] = code;
		r.made = slot + 1;
	}
	int code = r.codes[slot];
	PMPI_Add_error_string(code, text);
	texts[code] = text;
	return code;
}

int mpiCodeWithText(int mpiClass, const char *call, const std::string &what)
{
	return mpiCodeWithText(mpiClass, (std::string(call) + ": " + what).c_str());
}

int mpiCodeFor(int rmaCode)
{
	char text[RMA_MAX_ERROR_STRING] = {};
	int len = 0;
	if (rma_error_string(rmaCode, text, &len) != RMA_SUCCESS)
		std::snprintf(text, sizeof text, "librma error %d", rmaCode);
	return mpiCodeWithText(mpiClassOf(rmaCode), text);
}

/* Where the program's handler is fatal, say what failed ourselves (MPICH's text can be garbage, §4.6). */
[[gnu::cold]] static void printIfFatal(MPI_Errhandler eh, const char *call, int code)
{
	bool fatal = eh == MPI_ERRORS_ARE_FATAL;
#ifdef RMAMPI_HAVE_ERRORS_ABORT
	fatal = fatal || eh == MPI_ERRORS_ABORT;
#endif
	if (!fatal)
		return;
	std::lock_guard<std::mutex> g(errMutex);
	auto it = texts.find(code);
	std::fprintf(stderr, "librma-mpi: rank %d: %s: %s\n", shim().worldRank, call,
		     it != texts.end() ? it->second.c_str() : "error");
}

int raiseMpi(ShimWin &w, int code, const char *call)
{
	MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
	if (PMPI_Win_get_errhandler(w.shadow, &eh) == MPI_SUCCESS) {
		printIfFatal(eh, call, code);
		PMPI_Errhandler_free(&eh);
	}
	PMPI_Win_call_errhandler(w.shadow, code);
	return code;
}

int raiseRma(ShimWin &w, int rmaCode, const char *call)
{
	return raiseMpi(w, mpiCodeFor(rmaCode), call);
}

int raiseOnComm(MPI_Comm comm, int code, const char *call)
{
	MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
	if (PMPI_Comm_get_errhandler(comm, &eh) == MPI_SUCCESS) {
		printIfFatal(eh, call, code);
		PMPI_Errhandler_free(&eh);
	}
	PMPI_Comm_call_errhandler(comm, code);
	return code;
}

/* The text the shim gave @code, if it issued it. */
bool textOf(int code, char *out, int *len)
{
	std::lock_guard<std::mutex> g(errMutex);
	auto it = texts.find(code);
	if (it == texts.end())
		return false;
	size_t n = std::min(it->second.size(), static_cast<size_t>(MPI_MAX_ERROR_STRING - 1));
	std::memcpy(out, it->second.data(), n);
	out[n] = '\0';
	*len = static_cast<int>(n);
	return true;
}

} /* namespace rmampi */

#ifndef OPEN_MPI
/* MPICH 4.0.2 prints garbage for codes added to predefined classes (§4.6): answer for ours. */
RMAMPI_EXPORT int MPI_Error_string(int errorcode, char *string, int *resultlen)
{
	if (string && resultlen && rmampi::textOf(errorcode, string, resultlen))
		return MPI_SUCCESS;
	return PMPI_Error_string(errorcode, string, resultlen);
}
#endif
