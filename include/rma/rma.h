/* SPDX-License-Identifier: MIT */
/**
 * @file rma.h
 * @brief librma's C API: MPI-3/4 one-sided communication among the
 *        processes of a host, through shared memory.
 *
 * Every function mirrors the MPI function of the same name with the `rma_`
 * prefix: same parameters, same order, same semantics (MPI_Put -> rma_put).
 * Constants keep MPI's names with the `RMA_` prefix.
 *
 * Conventions used by every function below:
 *  - Return value: RMA_SUCCESS, or an error code. rma_error_class() maps a
 *    code to its class (RMA_ERR_*), rma_error_string() to a message that names
 *    the call, the object and the offending numbers. Before returning an error
 *    the call invokes the error handler of the object involved (window, else
 *    communicator, else RMA_COMM_SELF); the default, RMA_ERRORS_ARE_FATAL,
 *    prints the message and aborts the job. Set RMA_ERRORS_RETURN to get the
 *    code back instead.
 *  - A call that fails has no effect: nothing is written to the target, no
 *    output argument is changed, no object is created.
 *  - Thread safety: librma provides RMA_THREAD_SERIALIZED. Calls on different
 *    windows from different threads are safe as long as the application
 *    serializes calls on each window and communicator.
 *  - Handles are plain values: copy them freely, compare them with ==, and
 *    with their RMA_*_NULL. A freed handle is detected when used (class of
 *    the object's kind, e.g. RMA_ERR_WIN), even through a stale copy.
 */
#ifndef RMA_RMA_H
#define RMA_RMA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RMA_API __attribute__((visibility("default")))

#define RMA_VERSION 3
#define RMA_SUBVERSION 1

/* ------------------------------------------------------------------------ */
/* Integer types                                                            */
/* ------------------------------------------------------------------------ */

/** Address-sized integer: displacements and sizes (MPI_Aint). */
typedef intptr_t rma_aint;
/** File offsets (MPI_Offset). */
typedef int64_t rma_offset;
/** Large counts (MPI_Count). */
typedef int64_t rma_count;

/* ------------------------------------------------------------------------ */
/* Handles                                                                  */
/* ------------------------------------------------------------------------ */

/* Opaque handles. Their values encode (kind, generation, index); the structs
 * are never defined, so handles of different kinds do not convert. */
typedef struct rma_comm_handle_ *rma_comm;
typedef struct rma_group_handle_ *rma_group;
typedef struct rma_win_handle_ *rma_win;
typedef struct rma_datatype_handle_ *rma_datatype;
typedef struct rma_info_handle_ *rma_info;
typedef struct rma_errhandler_handle_ *rma_errhandler;
typedef struct rma_request_handle_ *rma_request;
typedef struct rma_op_handle_ *rma_op;
/* Status of a completed request (defined with the datatypes below). */
typedef struct rma_status rma_status;

/* Handle kinds (internal encoding, stable for the life of an ABI). */
#define RMA_HANDLE_KIND_COMM_ 1u
#define RMA_HANDLE_KIND_GROUP_ 2u
#define RMA_HANDLE_KIND_WIN_ 3u
#define RMA_HANDLE_KIND_DATATYPE_ 4u
#define RMA_HANDLE_KIND_INFO_ 5u
#define RMA_HANDLE_KIND_ERRHANDLER_ 6u
#define RMA_HANDLE_KIND_REQUEST_ 7u
#define RMA_HANDLE_KIND_OP_ 8u
#define RMA_PREDEFINED_(type, kind, index) \
	((type)(uintptr_t)(((uint64_t)(kind) << 56) | (uint64_t)(index)))

#define RMA_COMM_NULL ((rma_comm)0)
#define RMA_COMM_WORLD RMA_PREDEFINED_(rma_comm, RMA_HANDLE_KIND_COMM_, 1)
#define RMA_COMM_SELF RMA_PREDEFINED_(rma_comm, RMA_HANDLE_KIND_COMM_, 2)

#define RMA_GROUP_NULL ((rma_group)0)
#define RMA_GROUP_EMPTY RMA_PREDEFINED_(rma_group, RMA_HANDLE_KIND_GROUP_, 1)

#define RMA_WIN_NULL ((rma_win)0)
#define RMA_INFO_NULL ((rma_info)0)
#define RMA_INFO_ENV RMA_PREDEFINED_(rma_info, RMA_HANDLE_KIND_INFO_, 1)

#define RMA_REQUEST_NULL ((rma_request)0)
#define RMA_STATUS_IGNORE ((rma_status *)0)
#define RMA_STATUSES_IGNORE ((rma_status *)0)

/*
 * Predefined reduction operations (accumulate family), each valid on MPI's
 * type classes only: MAX/MIN on integers (C integers and AINT/OFFSET/COUNT)
 * and floating point; SUM/PROD also on complex; LAND/LOR/LXOR on C integers
 * and C_BOOL; BAND/BOR/BXOR on integers and BYTE; MAXLOC/MINLOC on the pair
 * types; REPLACE and NO_OP on every type but PACKED (NO_OP only in the calls
 * that fetch). RMA_CHAR is taken as the platform's char (signed on x86-64), a C
 * integer, as MPICH and Open MPI take it; WCHAR is a character: REPLACE and
 * NO_OP only.
 */
#define RMA_OP_NULL ((rma_op)0)
#define RMA_MAX RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 1)
#define RMA_MIN RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 2)
#define RMA_SUM RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 3)
#define RMA_PROD RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 4)
#define RMA_LAND RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 5)
#define RMA_BAND RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 6)
#define RMA_LOR RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 7)
#define RMA_BOR RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 8)
#define RMA_LXOR RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 9)
#define RMA_BXOR RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 10)
#define RMA_MAXLOC RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 11)
#define RMA_MINLOC RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 12)
#define RMA_REPLACE RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 13)
#define RMA_NO_OP RMA_PREDEFINED_(rma_op, RMA_HANDLE_KIND_OP_, 14)

#define RMA_ERRHANDLER_NULL ((rma_errhandler)0)
/** Print the error's message and abort the job (the default). */
#define RMA_ERRORS_ARE_FATAL RMA_PREDEFINED_(rma_errhandler, RMA_HANDLE_KIND_ERRHANDLER_, 1)
/** Return the error code to the caller. */
#define RMA_ERRORS_RETURN RMA_PREDEFINED_(rma_errhandler, RMA_HANDLE_KIND_ERRHANDLER_, 2)
/** Like RMA_ERRORS_ARE_FATAL, but abort only the processes of the object's group. */
#define RMA_ERRORS_ABORT RMA_PREDEFINED_(rma_errhandler, RMA_HANDLE_KIND_ERRHANDLER_, 3)

/* Predefined datatypes: every C basic type MPI names. */
#define RMA_DATATYPE_NULL ((rma_datatype)0)
#define RMA_DT_(i) RMA_PREDEFINED_(rma_datatype, RMA_HANDLE_KIND_DATATYPE_, i)
#define RMA_CHAR RMA_DT_(1)
#define RMA_SIGNED_CHAR RMA_DT_(2)
#define RMA_UNSIGNED_CHAR RMA_DT_(3)
#define RMA_BYTE RMA_DT_(4)
#define RMA_SHORT RMA_DT_(5)
#define RMA_UNSIGNED_SHORT RMA_DT_(6)
#define RMA_INT RMA_DT_(7)
#define RMA_UNSIGNED RMA_DT_(8)
#define RMA_LONG RMA_DT_(9)
#define RMA_UNSIGNED_LONG RMA_DT_(10)
#define RMA_LONG_LONG_INT RMA_DT_(11)
#define RMA_LONG_LONG RMA_LONG_LONG_INT
#define RMA_UNSIGNED_LONG_LONG RMA_DT_(12)
#define RMA_FLOAT RMA_DT_(13)
#define RMA_DOUBLE RMA_DT_(14)
#define RMA_LONG_DOUBLE RMA_DT_(15)
#define RMA_WCHAR RMA_DT_(16)
#define RMA_C_BOOL RMA_DT_(17)
#define RMA_INT8_T RMA_DT_(18)
#define RMA_INT16_T RMA_DT_(19)
#define RMA_INT32_T RMA_DT_(20)
#define RMA_INT64_T RMA_DT_(21)
#define RMA_UINT8_T RMA_DT_(22)
#define RMA_UINT16_T RMA_DT_(23)
#define RMA_UINT32_T RMA_DT_(24)
#define RMA_UINT64_T RMA_DT_(25)
#define RMA_C_FLOAT_COMPLEX RMA_DT_(26)
#define RMA_C_COMPLEX RMA_C_FLOAT_COMPLEX
#define RMA_C_DOUBLE_COMPLEX RMA_DT_(27)
#define RMA_C_LONG_DOUBLE_COMPLEX RMA_DT_(28)
#define RMA_AINT RMA_DT_(29)
#define RMA_OFFSET RMA_DT_(30)
#define RMA_COUNT RMA_DT_(31)
#define RMA_PACKED RMA_DT_(32)
/* Pair types (MAXLOC/MINLOC): the C struct of the value and an int, with its padding. */
#define RMA_FLOAT_INT RMA_DT_(33)       /* struct { float v; int i; } */
#define RMA_DOUBLE_INT RMA_DT_(34)      /* struct { double v; int i; } */
#define RMA_LONG_INT RMA_DT_(35)        /* struct { long v; int i; } */
#define RMA_2INT RMA_DT_(36)            /* struct { int v; int i; } */
#define RMA_SHORT_INT RMA_DT_(37)       /* struct { short v; int i; } */
#define RMA_LONG_DOUBLE_INT RMA_DT_(38) /* struct { long double v; int i; } */

/* ------------------------------------------------------------------------ */
/* Constants                                                                */
/* ------------------------------------------------------------------------ */

#define RMA_PROC_NULL (-2)
#define RMA_UNDEFINED (-32766)
/*
 * The address 0, as MPI_BOTTOM: a buffer argument whose datatype holds
 * absolute addresses (from rma_get_address), on the origin, result and
 * compare sides, and the base of a dynamic window's displacements.
 * Buffer checks look at the first byte a datatype touches (buffer + its true
 * lower bound), so RMA_BOTTOM with absolute displacements passes them.
 */
#define RMA_BOTTOM ((void *)0)
#define RMA_MAX_ERROR_STRING 512
#define RMA_MAX_INFO_KEY 255
#define RMA_MAX_INFO_VAL 1024
#define RMA_MAX_OBJECT_NAME 128

/* Results of rma_group_compare(). RMA_CONGRUENT is for communicators (not returned for groups). */
#define RMA_IDENT 0
#define RMA_CONGRUENT 1
#define RMA_SIMILAR 2
#define RMA_UNEQUAL 3

/* Split types of rma_comm_split_type(). */
#define RMA_COMM_TYPE_SHARED 1

/* A keyval no rma_win_create_keyval() returns; what rma_win_free_keyval() leaves. */
#define RMA_KEYVAL_INVALID (-1)

/* Thread levels (rma_init_thread). */
#define RMA_THREAD_SINGLE 0
#define RMA_THREAD_FUNNELED 1
#define RMA_THREAD_SERIALIZED 2
#define RMA_THREAD_MULTIPLE 3

/* Window attributes (rma_win_get_attr keyvals). */
#define RMA_WIN_BASE 1
#define RMA_WIN_SIZE 2
#define RMA_WIN_DISP_UNIT 3
#define RMA_WIN_CREATE_FLAVOR 4
#define RMA_WIN_MODEL 5

/* Values of RMA_WIN_CREATE_FLAVOR. */
#define RMA_WIN_FLAVOR_CREATE 1
#define RMA_WIN_FLAVOR_ALLOCATE 2
#define RMA_WIN_FLAVOR_DYNAMIC 3
#define RMA_WIN_FLAVOR_SHARED 4

/* Values of RMA_WIN_MODEL. librma windows are always unified. */
#define RMA_WIN_SEPARATE 1
#define RMA_WIN_UNIFIED 2

/* Assertions for synchronization calls (bit flags, may be or-ed). */
#define RMA_MODE_NOCHECK 1
#define RMA_MODE_NOSTORE 2
#define RMA_MODE_NOPUT 4
#define RMA_MODE_NOPRECEDE 8
#define RMA_MODE_NOSUCCEED 16

/* Lock types. */
#define RMA_LOCK_EXCLUSIVE 234
#define RMA_LOCK_SHARED 235

/* ------------------------------------------------------------------------ */
/* Error classes (MPI's, with the RMA_ prefix)                              */
/* ------------------------------------------------------------------------ */

#define RMA_SUCCESS 0
#define RMA_ERR_BUFFER 1
#define RMA_ERR_COUNT 2
#define RMA_ERR_TYPE 3
#define RMA_ERR_TAG 4
#define RMA_ERR_COMM 5
#define RMA_ERR_RANK 6
#define RMA_ERR_REQUEST 7
#define RMA_ERR_GROUP 9
#define RMA_ERR_OP 10
#define RMA_ERR_ARG 12
#define RMA_ERR_UNKNOWN 13
#define RMA_ERR_TRUNCATE 14
#define RMA_ERR_OTHER 15
#define RMA_ERR_INTERN 16
#define RMA_ERR_PENDING 18
#define RMA_ERR_BASE 20
#define RMA_ERR_INFO 21
#define RMA_ERR_INFO_KEY 22
#define RMA_ERR_INFO_NOKEY 23
#define RMA_ERR_INFO_VALUE 24
#define RMA_ERR_KEYVAL 25
#define RMA_ERR_NO_MEM 26
#define RMA_ERR_WIN 27
#define RMA_ERR_SIZE 28
#define RMA_ERR_DISP 29
#define RMA_ERR_LOCKTYPE 30
#define RMA_ERR_ASSERT 31
#define RMA_ERR_RMA_CONFLICT 32
#define RMA_ERR_RMA_SYNC 33
#define RMA_ERR_RMA_RANGE 34
#define RMA_ERR_RMA_ATTACH 35
#define RMA_ERR_RMA_SHARED 36
#define RMA_ERR_RMA_FLAVOR 37
/*
 * RMA_ERR_PROC_FAILED: a process the call involves has died. Under rmarun
 * (with --keep-going, so that the survivors run on) the launcher marks a
 * rank dead the moment it reaps it, in a page every rank maps; from then
 * on, within microseconds, every operation to it (put, get, the
 * accumulate family, their request forms), every flush that covers it and
 * every synchronization that involves it (fence, lock, lock_all, start,
 * post, complete, wait, test, and an unlock or unlock_all, which still end
 * their epoch) returns this error. Operations to live ranks go on working;
 * rma_win_free releases a window with a dead member (see there), and
 * windows over communicators of survivors can be created and used. The
 * check costs one load of a read-mostly cache line per operation.
 */
#define RMA_ERR_PROC_FAILED 38
#define RMA_ERR_NOT_SUPPORTED 39
#define RMA_ERR_LASTCODE 40

/* ------------------------------------------------------------------------ */
/* Environment                                                              */
/* ------------------------------------------------------------------------ */

/**
 * @brief Initialize librma (collective over the job).
 *
 * Started by rmarun, the process joins the job rmarun launched; started on
 * its own, it is a job of one rank. Must precede every other call except
 * rma_initialized(), rma_finalized() and rma_wtime().
 * @param[in,out] argc, argv  The program's arguments (may be NULL); unchanged.
 * @return RMA_SUCCESS; RMA_ERR_OTHER if already initialized or finalized;
 *         RMA_ERR_INTERN if the launcher's bootstrap cannot be reached.
 */
RMA_API int rma_init(int *argc, char ***argv);

/**
 * @brief rma_init() with a thread level request.
 * @param[in] required  RMA_THREAD_SINGLE ... RMA_THREAD_MULTIPLE.
 * @param[out] provided The level librma provides: min(required, RMA_THREAD_SERIALIZED).
 * @return As rma_init(); RMA_ERR_ARG for an unknown level.
 */
RMA_API int rma_init_thread(int *argc, char ***argv, int required, int *provided);

/** @brief How librma joins a job that another runtime (an MPI library) already connected: rma_init_external(). */
typedef struct rma_bootstrap_ops {
	unsigned version;    /**< RMA_BOOTSTRAP_OPS_VERSION */
	int rank;            /**< this process in the external world, 0..size-1 */
	int size;            /**< processes in the external world */
	const int *host_of;  /**< size entries; equal values = processes that share memory (copied) */
	uint64_t job_id;     /**< equal at every rank, distinct between concurrent jobs on a host */
	void *arg;           /**< handed back to every callback */
	/**
	 * Collective over exactly @p members (external world ranks in group order;
	 * this process is members[my_index]): every member gives @p len bytes at
	 * @p send, every member gets count * len bytes at @p recv, in member
	 * order. Blocking; called only on librma's setup path (init, communicator
	 * and window creation and free, finalize), never on the data path, from
	 * the thread that is inside the rma_ call. Returns 0, or non-zero (librma
	 * then fails the call with RMA_ERR_INTERN naming the collective).
	 */
	int (*allgather)(void *arg, const int *members, int count, int my_index, const void *send, size_t len,
			 void *recv);
	/** End the whole job with @p code (MPI_Abort); must not return. */
	void (*abort)(void *arg, int code);
} rma_bootstrap_ops;

/** The rma_bootstrap_ops layout this header describes. */
#define RMA_BOOTSTRAP_OPS_VERSION 1

/**
 * @brief rma_init_thread() for a process whose job another runtime started.
 *
 * librma's world is the external world of @p ops (RMA_COMM_WORLD rank r is
 * external rank r); collective data goes through @p ops->allgather, file
 * descriptors between the processes of a host through librma's own
 * host-local channel (abstract Unix sockets named after @p ops->job_id).
 * Collective over the external world. The progress agent and segments are
 * made at the first window, as after rma_init(). rma_finalize() then ends
 * librma only (a world barrier through @p ops), never the process.
 * @param[in] ops       Copied; its callbacks must stay callable until rma_finalize() returns.
 * @param[in] required  RMA_THREAD_SINGLE ... RMA_THREAD_MULTIPLE. Up to
 *                      SERIALIZED the ranks of a host meet for collectives on
 *                      librma's shared-memory board; RMA_THREAD_MULTIPLE says
 *                      that the caller may run collectives of different
 *                      communicators from several threads at once (serializing
 *                      everything else itself), and then they meet through
 *                      @p ops->allgather and the host-local channel.
 * @param[out] provided min(required, RMA_THREAD_SERIALIZED).
 * @return RMA_SUCCESS; RMA_ERR_ARG for a NULL or unknown-version @p ops, a
 *         NULL callback, or rank/size/host_of out of range; RMA_ERR_OTHER if
 *         already initialized or finalized; RMA_ERR_INTERN if a collective
 *         callback fails or the host-local channel cannot listen.
 */
RMA_API int rma_init_external(const rma_bootstrap_ops *ops, int required, int *provided);

/**
 * @brief Finalize librma (collective over the job).
 *
 * Waits until every rank calls it, then frees what is left (windows the
 * application did not free are freed without error checking). Ranks that
 * died are not waited for: the survivors finalize without them.
 * @return RMA_SUCCESS; RMA_ERR_OTHER if not initialized.
 */
RMA_API int rma_finalize(void);

/** @brief Set *flag to 1 if rma_init() has been called (even if finalized). Always RMA_SUCCESS. */
RMA_API int rma_initialized(int *flag);

/** @brief Set *flag to 1 if rma_finalize() has completed. Always RMA_SUCCESS. */
RMA_API int rma_finalized(int *flag);

/**
 * @brief Terminate every process of the job with exit code @p errorcode.
 *
 * Under rmarun the launcher stops all ranks and exits with @p errorcode.
 * Does not return.
 */
RMA_API int rma_abort(rma_comm comm, int errorcode);

/** @brief Wall-clock time in seconds from an arbitrary origin (monotonic; no system call). */
RMA_API double rma_wtime(void);

/** @brief Resolution of rma_wtime() in seconds. */
RMA_API double rma_wtick(void);

/**
 * @brief The address of @p location as an rma_aint (for dynamic windows).
 * @return RMA_SUCCESS; RMA_ERR_ARG if @p address is NULL.
 */
RMA_API int rma_get_address(const void *location, rma_aint *address);

/** @brief base + disp as an address (MPI_Aint_add). */
RMA_API rma_aint rma_aint_add(rma_aint base, rma_aint disp);

/** @brief addr1 - addr2 as a displacement (MPI_Aint_diff). */
RMA_API rma_aint rma_aint_diff(rma_aint addr1, rma_aint addr2);

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/**
 * @brief The class (RMA_ERR_*) of an error code.
 * @return RMA_SUCCESS; RMA_ERR_ARG if @p errorcode is not a code librma made.
 */
RMA_API int rma_error_class(int errorcode, int *errorclass);

/**
 * @brief The message of an error code (at most RMA_MAX_ERROR_STRING bytes
 *        including the terminating NUL).
 *
 * Codes returned by a failed call carry a message naming the call, object
 * and numbers; the most recent 256 such messages are kept, older codes and
 * bare classes give the class's generic message.
 * @return RMA_SUCCESS; RMA_ERR_ARG for NULL arguments or an unknown code.
 */
RMA_API int rma_error_string(int errorcode, char *string, int *resultlen);

/** Prototype of a user communicator error handler (MPI_Comm_errhandler_function). */
typedef void rma_comm_errhandler_function(rma_comm *comm, int *errorcode, ...);
/** Prototype of a user window error handler (MPI_Win_errhandler_function). */
typedef void rma_win_errhandler_function(rma_win *win, int *errorcode, ...);

/** @brief Make an error handler that calls @p fn for communicator errors. RMA_ERR_ARG if fn is NULL. */
RMA_API int rma_comm_create_errhandler(rma_comm_errhandler_function *fn, rma_errhandler *errhandler);
/** @brief Make an error handler that calls @p fn for window errors. RMA_ERR_ARG if fn is NULL. */
RMA_API int rma_win_create_errhandler(rma_win_errhandler_function *fn, rma_errhandler *errhandler);
/**
 * @brief Free a user error handler and set the handle to RMA_ERRHANDLER_NULL.
 *        Objects it is attached to keep using it. RMA_ERR_ARG for a predefined or invalid handle.
 */
RMA_API int rma_errhandler_free(rma_errhandler *errhandler);

/**
 * @brief Attach an error handler to a communicator. Communicators made from
 *        it later inherit it; windows start with RMA_ERRORS_ARE_FATAL, as in MPI.
 * @return RMA_SUCCESS; RMA_ERR_COMM; RMA_ERR_ARG for a window-only handler or invalid handle.
 */
RMA_API int rma_comm_set_errhandler(rma_comm comm, rma_errhandler errhandler);
/** @brief The error handler of a communicator. RMA_ERR_COMM for an invalid communicator. */
RMA_API int rma_comm_get_errhandler(rma_comm comm, rma_errhandler *errhandler);
/**
 * @brief Attach an error handler to a window.
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_ARG for a communicator-only handler or invalid handle.
 */
RMA_API int rma_win_set_errhandler(rma_win win, rma_errhandler errhandler);
/** @brief The error handler of a window. RMA_ERR_WIN for an invalid window. */
RMA_API int rma_win_get_errhandler(rma_win win, rma_errhandler *errhandler);
/**
 * @brief Invoke the error handler of @p win with @p errorcode, as a failing
 *        call on the window would (MPI_Win_call_errhandler).
 *
 * @p errorcode may be any value (a librma code, a class, or the
 * application's own number); it is passed to a user handler unchanged.
 * RMA_ERRORS_ARE_FATAL and RMA_ERRORS_ABORT print the code's message and end
 * the job (the call does not return). Local; completes before returning.
 * @return RMA_SUCCESS once the handler has returned (RMA_ERRORS_RETURN and
 *         user handlers), whatever @p errorcode is; RMA_ERR_WIN for an
 *         invalid window (raised on RMA_COMM_SELF).
 */
RMA_API int rma_win_call_errhandler(rma_win win, int errorcode);

/* ------------------------------------------------------------------------ */
/* Communicators and groups                                                 */
/* ------------------------------------------------------------------------ */

/** @brief This process's rank in @p comm. RMA_ERR_COMM for an invalid communicator. */
RMA_API int rma_comm_rank(rma_comm comm, int *rank);
/** @brief The number of processes in @p comm. RMA_ERR_COMM for an invalid communicator. */
RMA_API int rma_comm_size(rma_comm comm, int *size);

/**
 * @brief Partition @p comm by @p color, order each part by (@p key, old rank).
 *
 * Collective over @p comm. A process passing RMA_UNDEFINED as color gets
 * RMA_COMM_NULL. The new communicator inherits @p comm's error handler.
 * @return RMA_SUCCESS; RMA_ERR_COMM; RMA_ERR_ARG for a negative color other
 *         than RMA_UNDEFINED.
 */
RMA_API int rma_comm_split(rma_comm comm, int color, int key, rma_comm *newcomm);
/**
 * @brief Partition @p comm by a property of its processes (MPI_Comm_split_type).
 *
 * RMA_COMM_TYPE_SHARED groups the processes of one host, which can map each
 * other's memory (every rank of an rmarun job today); each part is ordered
 * by (@p key, old rank). Collective over @p comm. A process passing
 * RMA_UNDEFINED gets RMA_COMM_NULL. The new communicator inherits @p comm's
 * error handler. @p info (may be RMA_INFO_NULL) carries no key librma uses.
 * A process whose @p split_type or @p info is bad still takes part (as
 * RMA_UNDEFINED) so that no peer waits forever, then returns the error.
 * @return RMA_SUCCESS; RMA_ERR_COMM; RMA_ERR_ARG for an unknown split type
 *         or a NULL @p newcomm; RMA_ERR_INFO for an invalid info object;
 *         RMA_ERR_PROC_FAILED if a member died.
 */
RMA_API int rma_comm_split_type(rma_comm comm, int split_type, int key, rma_info info, rma_comm *newcomm);
/**
 * @brief A communicator of the members of @p group, a subset of @p comm's
 *        group, in @p group's order (MPI_Comm_create_group).
 *
 * Collective over the members of @p group only: the other processes of
 * @p comm take no part and need not call. Calls that run at the same time
 * on the same @p comm with overlapping groups must use different @p tag
 * values; concurrent calls with disjoint groups may share one. A process
 * not in @p group (e.g. RMA_GROUP_EMPTY) gets RMA_COMM_NULL at once (local).
 * Every member must pass the same group (the same processes in the same
 * order) and tag: members that disagree do not meet, and wait. The new
 * communicator inherits @p comm's error handler. Costs one bootstrap
 * collective over the members (none for a group of one).
 * @return RMA_SUCCESS; RMA_ERR_COMM; RMA_ERR_GROUP for an invalid group or
 *         one with a process outside @p comm; RMA_ERR_TAG for a negative
 *         tag; RMA_ERR_ARG for a NULL @p newcomm; RMA_ERR_PROC_FAILED if a
 *         member died.
 */
RMA_API int rma_comm_create_group(rma_comm comm, rma_group group, int tag, rma_comm *newcomm);
/** @brief Duplicate @p comm (collective): same group, new context, same error handler. */
RMA_API int rma_comm_dup(rma_comm comm, rma_comm *newcomm);
/**
 * @brief Free a communicator made by split or dup; sets *comm to RMA_COMM_NULL.
 *        Windows created over it stay valid. RMA_ERR_COMM for predefined or invalid handles.
 */
RMA_API int rma_comm_free(rma_comm *comm);
/** @brief The group of @p comm (free it with rma_group_free). */
RMA_API int rma_comm_group(rma_comm comm, rma_group *group);

/**
 * @brief Block until every process of @p comm has called it.
 * @return RMA_SUCCESS; RMA_ERR_COMM; RMA_ERR_PROC_FAILED if a member died.
 */
RMA_API int rma_barrier(rma_comm comm);

/** @brief Number of processes in @p group. RMA_ERR_GROUP for an invalid group. */
RMA_API int rma_group_size(rma_group group, int *size);
/** @brief This process's rank in @p group, or RMA_UNDEFINED if not a member. */
RMA_API int rma_group_rank(rma_group group, int *rank);
/**
 * @brief New group of the @p n members ranks[0..n-1] of @p group, in that order.
 * @return RMA_SUCCESS; RMA_ERR_GROUP; RMA_ERR_ARG for n < 0 or n > size;
 *         RMA_ERR_RANK for an out-of-range or repeated rank.
 */
RMA_API int rma_group_incl(rma_group group, int n, const int ranks[], rma_group *newgroup);
/**
 * @brief New group of the members of @p group not in ranks[0..n-1], in their order.
 * @return As rma_group_incl().
 */
RMA_API int rma_group_excl(rma_group group, int n, const int ranks[], rma_group *newgroup);
/**
 * @brief New group of the ranks of @p group named by @p n triplets
 *        (first, last, stride), in the order the triplets list them
 *        (MPI_Group_range_incl).
 *
 * Triplet i names first, first + stride, ..., first + k * stride with
 * k = floor((last - first) / stride): strides may be negative (first >=
 * last then), and @p last need not itself be named ((0, 5, 2) names 0, 2, 4).
 * Local; completes before returning. n = 0 gives RMA_GROUP_EMPTY.
 * @return RMA_SUCCESS; RMA_ERR_GROUP; RMA_ERR_ARG for n < 0, NULL
 *         @p ranges with n > 0 or NULL @p newgroup, a stride of 0, or a
 *         stride pointing away from last (e.g. (3, 1, 1)), which names no
 *         sequence; RMA_ERR_RANK when a named rank is outside the group or
 *         named twice (the message gives the triplet and the rank).
 */
RMA_API int rma_group_range_incl(rma_group group, int n, int ranges[][3], rma_group *newgroup);
/**
 * @brief New group of the ranks of @p group not named by the triplets, in
 *        their order in @p group (MPI_Group_range_excl).
 * @return As rma_group_range_incl().
 */
RMA_API int rma_group_range_excl(rma_group group, int n, int ranges[][3], rma_group *newgroup);
/**
 * @brief Compare two groups: RMA_IDENT (same members in the same order),
 *        RMA_SIMILAR (same members, another order), else RMA_UNEQUAL.
 *        Two empty groups are RMA_IDENT. Local.
 * @return RMA_SUCCESS; RMA_ERR_GROUP for an invalid group; RMA_ERR_ARG for a NULL @p result.
 */
RMA_API int rma_group_compare(rma_group group1, rma_group group2, int *result);
/**
 * @brief For each ranks1[i] of group1, its rank in group2 (or RMA_UNDEFINED).
 *        RMA_PROC_NULL translates to RMA_PROC_NULL.
 */
RMA_API int rma_group_translate_ranks(rma_group group1, int n, const int ranks1[], rma_group group2,
				      int ranks2[]);
/** @brief Free a group; sets *group to RMA_GROUP_NULL. RMA_GROUP_EMPTY may not be freed. */
RMA_API int rma_group_free(rma_group *group);

/* ------------------------------------------------------------------------ */
/* Info objects                                                             */
/* ------------------------------------------------------------------------ */

/** @brief A new, empty info object. */
RMA_API int rma_info_create(rma_info *info);
/**
 * @brief Set @p key to @p value (replacing an existing value).
 * @return RMA_SUCCESS; RMA_ERR_INFO; RMA_ERR_INFO_KEY for an empty key or one
 *         longer than RMA_MAX_INFO_KEY; RMA_ERR_INFO_VALUE for a value longer
 *         than RMA_MAX_INFO_VAL.
 */
RMA_API int rma_info_set(rma_info info, const char *key, const char *value);
/**
 * @brief Look @p key up; copies at most @p valuelen characters plus a NUL.
 * @param[out] flag  1 if the key is set, else 0 (value untouched).
 */
RMA_API int rma_info_get(rma_info info, const char *key, int valuelen, char *value, int *flag);
/**
 * @brief MPI-4 form: on entry *buflen is the size of @p value; on return the
 *        length of the value plus one. Truncates to fit.
 */
RMA_API int rma_info_get_string(rma_info info, const char *key, int *buflen, char *value, int *flag);
/** @brief Length of @p key's value (without NUL); *flag = 0 if unset. */
RMA_API int rma_info_get_valuelen(rma_info info, const char *key, int *valuelen, int *flag);
/** @brief Number of keys set. */
RMA_API int rma_info_get_nkeys(rma_info info, int *nkeys);
/** @brief The @p n th key (0-based, in insertion order). RMA_ERR_ARG if out of range. */
RMA_API int rma_info_get_nthkey(rma_info info, int n, char *key);
/** @brief Remove @p key. RMA_ERR_INFO_NOKEY if it is not set. */
RMA_API int rma_info_delete(rma_info info, const char *key);
/** @brief A copy of @p info. */
RMA_API int rma_info_dup(rma_info info, rma_info *newinfo);
/** @brief Free @p info; sets it to RMA_INFO_NULL. */
RMA_API int rma_info_free(rma_info *info);

/* ------------------------------------------------------------------------ */
/* Datatypes                                                                */
/*                                                                          */
/* A datatype describes one element of a buffer: its type map is a list of */
/* (basic type, displacement) entries plus a lower bound and an extent; a   */
/* count of a type is that many copies, each one extent after the previous */
/* (MPI's rules, including negative strides and resized bounds). Two types  */
/* match when their type signatures (the sequences of basic types, counts   */
/* multiplied out) match: data sent as (count, type) must be a prefix of    */
/* what the receiving (count, type) holds. RMA_PACKED matches any type by   */
/* bytes; RMA_BYTE matches only RMA_BYTE.                                   */
/*                                                                          */
/* Constructors return a new, uncommitted type: commit it before using it  */
/* in communication or pack/unpack (it may be used to build other types    */
/* before). Every type made here must be freed with rma_type_free(). A     */
/* constructor fails with RMA_ERR_NO_MEM when the new type's signature      */
/* would need more than 2^22 distinct runs (repetitions are kept as         */
/* repeats, never multiplied out, so only irregular types can).             */
/* Errors of these calls go to RMA_COMM_SELF's error handler. All of them  */
/* are local and complete before returning.                                 */
/*                                                                          */
/* Large counts: the _c forms take and return rma_count; the _x forms are  */
/* MPI-3's. A type made by an _c constructor reports its arguments through */
/* rma_type_get_envelope_c()/rma_type_get_contents_c() only.                */
/*                                                                          */
/* Thread safety: constructors, commit, free and set_name on one type must */
/* be serialized with every other use of that type (RMA_THREAD_SERIALIZED); */
/* queries and pack/unpack on committed types are thread-safe.              */
/* ------------------------------------------------------------------------ */

/* Array orders of rma_type_create_subarray(). */
#define RMA_ORDER_C 56
#define RMA_ORDER_FORTRAN 57

/* Combiners: how a type was made (rma_type_get_envelope()). */
#define RMA_COMBINER_NAMED 1
#define RMA_COMBINER_DUP 2
#define RMA_COMBINER_CONTIGUOUS 3
#define RMA_COMBINER_VECTOR 4
#define RMA_COMBINER_HVECTOR 5
#define RMA_COMBINER_INDEXED 6
#define RMA_COMBINER_HINDEXED 7
#define RMA_COMBINER_INDEXED_BLOCK 8
#define RMA_COMBINER_HINDEXED_BLOCK 9
#define RMA_COMBINER_STRUCT 10
#define RMA_COMBINER_SUBARRAY 11
#define RMA_COMBINER_RESIZED 12

/**
 * The status of a transfer, as MPI_Status: source, tag and error fields the
 * application may read, and the amount of data (hidden; read it with
 * rma_get_count() / rma_get_elements() and set it with
 * rma_status_set_elements()).
 */
struct rma_status { /* typedef'd as rma_status with the handles */
	int RMA_SOURCE;
	int RMA_TAG;
	int RMA_ERROR;
	int cancelled_;   /* reserved */
	rma_count bytes_; /* bytes of data the status describes */
};

/**
 * @brief A type of @p count copies of @p oldtype, one extent apart (MPI_Type_contiguous).
 * @param[out] newtype  The new, uncommitted type.
 * @return RMA_SUCCESS; RMA_ERR_COUNT (count < 0); RMA_ERR_TYPE (invalid oldtype);
 *         RMA_ERR_ARG (newtype NULL, or the type's extent overflows rma_aint).
 */
RMA_API int rma_type_contiguous(int count, rma_datatype oldtype, rma_datatype *newtype);
/** @brief rma_type_contiguous() with a large count. */
RMA_API int rma_type_contiguous_c(rma_count count, rma_datatype oldtype, rma_datatype *newtype);

/**
 * @brief @p count blocks of @p blocklength copies of @p oldtype, block i
 *        starting i * @p stride extents of oldtype from the first (MPI_Type_vector).
 *        Strides may be zero or negative.
 * @return As rma_type_contiguous(); RMA_ERR_ARG for blocklength < 0.
 */
RMA_API int rma_type_vector(int count, int blocklength, int stride, rma_datatype oldtype, rma_datatype *newtype);
/** @brief rma_type_vector() with large counts. */
RMA_API int rma_type_vector_c(rma_count count, rma_count blocklength, rma_count stride, rma_datatype oldtype,
			      rma_datatype *newtype);

/** @brief rma_type_vector() with @p stride in bytes (MPI_Type_create_hvector). */
RMA_API int rma_type_create_hvector(int count, int blocklength, rma_aint stride, rma_datatype oldtype,
				    rma_datatype *newtype);
/** @brief rma_type_create_hvector() with large counts. */
RMA_API int rma_type_create_hvector_c(rma_count count, rma_count blocklength, rma_count stride,
				      rma_datatype oldtype, rma_datatype *newtype);

/**
 * @brief @p count blocks, block i of array_of_blocklengths[i] copies of
 *        @p oldtype at array_of_displacements[i] extents of oldtype (MPI_Type_indexed).
 * @return As rma_type_vector(); RMA_ERR_ARG also for NULL arrays with count > 0.
 */
RMA_API int rma_type_indexed(int count, const int array_of_blocklengths[], const int array_of_displacements[],
			     rma_datatype oldtype, rma_datatype *newtype);
/** @brief rma_type_indexed() with large counts. */
RMA_API int rma_type_indexed_c(rma_count count, const rma_count array_of_blocklengths[],
			       const rma_count array_of_displacements[], rma_datatype oldtype, rma_datatype *newtype);

/** @brief rma_type_indexed() with displacements in bytes (MPI_Type_create_hindexed). */
RMA_API int rma_type_create_hindexed(int count, const int array_of_blocklengths[],
				     const rma_aint array_of_displacements[], rma_datatype oldtype,
				     rma_datatype *newtype);
/** @brief rma_type_create_hindexed() with large counts. */
RMA_API int rma_type_create_hindexed_c(rma_count count, const rma_count array_of_blocklengths[],
				       const rma_count array_of_displacements[], rma_datatype oldtype,
				       rma_datatype *newtype);

/** @brief rma_type_indexed() with one block length for all blocks (MPI_Type_create_indexed_block). */
RMA_API int rma_type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
					  rma_datatype oldtype, rma_datatype *newtype);
/** @brief rma_type_create_indexed_block() with large counts. */
RMA_API int rma_type_create_indexed_block_c(rma_count count, rma_count blocklength,
					    const rma_count array_of_displacements[], rma_datatype oldtype,
					    rma_datatype *newtype);

/** @brief rma_type_create_hindexed() with one block length (MPI_Type_create_hindexed_block). */
RMA_API int rma_type_create_hindexed_block(int count, int blocklength, const rma_aint array_of_displacements[],
					   rma_datatype oldtype, rma_datatype *newtype);
/** @brief rma_type_create_hindexed_block() with large counts. */
RMA_API int rma_type_create_hindexed_block_c(rma_count count, rma_count blocklength,
					     const rma_count array_of_displacements[], rma_datatype oldtype,
					     rma_datatype *newtype);

/**
 * @brief @p count blocks, block i of array_of_blocklengths[i] copies of
 *        array_of_types[i] at array_of_displacements[i] bytes (MPI_Type_create_struct).
 *
 * As in MPI, the extent is rounded up to the strictest alignment of the
 * basic types inside (so it matches the C struct's sizeof), unless a
 * resized type is part of it.
 * @return As rma_type_indexed(); RMA_ERR_TYPE if any of the types is invalid.
 */
RMA_API int rma_type_create_struct(int count, const int array_of_blocklengths[],
				   const rma_aint array_of_displacements[], const rma_datatype array_of_types[],
				   rma_datatype *newtype);
/** @brief rma_type_create_struct() with large counts. */
RMA_API int rma_type_create_struct_c(rma_count count, const rma_count array_of_blocklengths[],
				     const rma_count array_of_displacements[], const rma_datatype array_of_types[],
				     rma_datatype *newtype);

/**
 * @brief The @p ndims dimensional block subsizes[] at starts[] of an array of
 *        sizes[] elements of @p oldtype (MPI_Type_create_subarray).
 *
 * @p order: RMA_ORDER_C (last index fastest) or RMA_ORDER_FORTRAN (first
 * index fastest). The new type's lb is 0 and its extent the whole array's.
 * @return RMA_SUCCESS; RMA_ERR_TYPE; RMA_ERR_ARG for ndims < 1, sizes < 1,
 *         subsizes outside 1..sizes, starts outside 0..sizes-subsizes, an
 *         unknown order, NULL arrays or an extent that overflows.
 */
RMA_API int rma_type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
				     const int array_of_starts[], int order, rma_datatype oldtype,
				     rma_datatype *newtype);
/** @brief rma_type_create_subarray() with large counts. */
RMA_API int rma_type_create_subarray_c(int ndims, const rma_count array_of_sizes[],
				       const rma_count array_of_subsizes[], const rma_count array_of_starts[], int order,
				       rma_datatype oldtype, rma_datatype *newtype);

/**
 * @brief @p oldtype with lower bound @p lb and extent @p extent (MPI_Type_create_resized);
 *        the data and true bounds are unchanged.
 * @return RMA_SUCCESS; RMA_ERR_TYPE; RMA_ERR_ARG (newtype NULL, lb + extent overflows).
 */
RMA_API int rma_type_create_resized(rma_datatype oldtype, rma_aint lb, rma_aint extent, rma_datatype *newtype);
/** @brief rma_type_create_resized() with rma_count bounds. */
RMA_API int rma_type_create_resized_c(rma_datatype oldtype, rma_count lb, rma_count extent,
				      rma_datatype *newtype);

/**
 * @brief A new type with the type map of @p oldtype, committed if oldtype is
 *        (MPI_Type_dup; combiner RMA_COMBINER_DUP).
 * @return RMA_SUCCESS; RMA_ERR_TYPE; RMA_ERR_ARG for newtype NULL.
 */
RMA_API int rma_type_dup(rma_datatype oldtype, rma_datatype *newtype);

/**
 * @brief Commit a type: flatten it once into the strided description that
 *        drives every transfer (nested strides stay strides, so its size
 *        does not grow with the elements it covers; a type too irregular to
 *        flatten within a memory bound is walked from its definition
 *        instead). Committing a committed or predefined type does nothing.
 * @return RMA_SUCCESS; RMA_ERR_TYPE (invalid handle); RMA_ERR_ARG (NULL).
 *         A type is never refused for its size, and any committed type
 *         works as the target type of every RMA call.
 */
RMA_API int rma_type_commit(rma_datatype *datatype);

/**
 * @brief Free a type and set *datatype to RMA_DATATYPE_NULL.
 *
 * Types built from it and operations still using it keep it alive until
 * they are freed or complete; the handle is invalid at once.
 * @return RMA_SUCCESS; RMA_ERR_TYPE for an invalid or predefined type; RMA_ERR_ARG (NULL).
 */
RMA_API int rma_type_free(rma_datatype *datatype);

/** @brief Name a type (used in error messages). RMA_ERR_ARG if longer than RMA_MAX_OBJECT_NAME-1. */
RMA_API int rma_type_set_name(rma_datatype datatype, const char *type_name);
/** @brief A type's name ("RMA_INT", or a description of a derived type); @p resultlen gets its length. */
RMA_API int rma_type_get_name(rma_datatype datatype, char *type_name, int *resultlen);

/**
 * @brief Bytes of data in one element of @p datatype (gaps excluded).
 * @param[out] size  The size, or RMA_UNDEFINED if it does not fit an int.
 * @return RMA_SUCCESS; RMA_ERR_TYPE if invalid; RMA_ERR_ARG for NULL.
 */
RMA_API int rma_type_size(rma_datatype datatype, int *size);
/** @brief rma_type_size() with an rma_count result. */
RMA_API int rma_type_size_x(rma_datatype datatype, rma_count *size);
/** @brief rma_type_size() with an rma_count result (MPI-4 name). */
RMA_API int rma_type_size_c(rma_datatype datatype, rma_count *size);

/** @brief Lower bound and extent of @p datatype. RMA_ERR_TYPE if invalid; RMA_ERR_ARG for NULL. */
RMA_API int rma_type_get_extent(rma_datatype datatype, rma_aint *lb, rma_aint *extent);
/** @brief rma_type_get_extent() with rma_count results. */
RMA_API int rma_type_get_extent_x(rma_datatype datatype, rma_count *lb, rma_count *extent);
/** @brief rma_type_get_extent() with rma_count results (MPI-4 name). */
RMA_API int rma_type_get_extent_c(rma_datatype datatype, rma_count *lb, rma_count *extent);

/**
 * @brief The bytes the data of one element actually spans: lowest byte and
 *        distance to one past the highest, whatever the bounds say (both 0
 *        for a type with no data). Errors as rma_type_get_extent().
 */
RMA_API int rma_type_get_true_extent(rma_datatype datatype, rma_aint *true_lb, rma_aint *true_extent);
/** @brief rma_type_get_true_extent() with rma_count results. */
RMA_API int rma_type_get_true_extent_x(rma_datatype datatype, rma_count *true_lb, rma_count *true_extent);
/** @brief rma_type_get_true_extent() with rma_count results (MPI-4 name). */
RMA_API int rma_type_get_true_extent_c(rma_datatype datatype, rma_count *true_lb, rma_count *true_extent);

/**
 * @brief How @p datatype was made: its combiner (RMA_COMBINER_*) and how many
 *        integers, addresses and types rma_type_get_contents() returns.
 *        Predefined types (pair types included) are RMA_COMBINER_NAMED, with 0 of each.
 * @return RMA_SUCCESS; RMA_ERR_TYPE (invalid, or made by an _c constructor
 *         with arguments that need rma_type_get_envelope_c()); RMA_ERR_ARG for NULL.
 */
RMA_API int rma_type_get_envelope(rma_datatype datatype, int *num_integers, int *num_addresses,
				  int *num_datatypes, int *combiner);
/** @brief rma_type_get_envelope() for every type, with the count of large-count arguments. */
RMA_API int rma_type_get_envelope_c(rma_datatype datatype, rma_count *num_integers, rma_count *num_addresses,
				    rma_count *num_large_counts, rma_count *num_datatypes, int *combiner);

/**
 * @brief The arguments @p datatype was made with, in MPI's layout for its
 *        combiner (e.g. vector: integers {count, blocklength, stride}, types {oldtype}).
 *
 * Returned derived types are new handles the caller must free (predefined
 * ones are returned as they are).
 * @return RMA_SUCCESS; RMA_ERR_TYPE (invalid; or made by an _c constructor);
 *         RMA_ERR_ARG for a predefined type, a max_* smaller than the
 *         envelope's count, or NULL arrays that are needed.
 */
RMA_API int rma_type_get_contents(rma_datatype datatype, int max_integers, int max_addresses, int max_datatypes,
				  int array_of_integers[], rma_aint array_of_addresses[],
				  rma_datatype array_of_datatypes[]);
/** @brief rma_type_get_contents() for every type, with large-count arguments. */
RMA_API int rma_type_get_contents_c(rma_datatype datatype, rma_count max_integers, rma_count max_addresses,
				    rma_count max_large_counts, rma_count max_datatypes, int array_of_integers[],
				    rma_aint array_of_addresses[], rma_count array_of_large_counts[],
				    rma_datatype array_of_datatypes[]);

/**
 * @brief Make @p status describe @p count basic elements of a buffer of
 *        @p datatype (MPI_Status_set_elements): rma_get_elements() with the
 *        same type then returns @p count.
 * @return RMA_SUCCESS; RMA_ERR_TYPE; RMA_ERR_COUNT (count < 0); RMA_ERR_ARG (NULL status).
 */
RMA_API int rma_status_set_elements(rma_status *status, rma_datatype datatype, int count);
/** @brief rma_status_set_elements() with a large count. */
RMA_API int rma_status_set_elements_x(rma_status *status, rma_datatype datatype, rma_count count);
/** @brief rma_status_set_elements() with a large count (MPI-4 name). */
RMA_API int rma_status_set_elements_c(rma_status *status, rma_datatype datatype, rma_count count);

/**
 * @brief How many whole elements of @p datatype @p status describes
 *        (MPI_Get_count): RMA_UNDEFINED if the data is not a whole number of
 *        them or the number does not fit; 0 for a type of size 0.
 * @return RMA_SUCCESS; RMA_ERR_TYPE; RMA_ERR_ARG (NULL).
 */
RMA_API int rma_get_count(const rma_status *status, rma_datatype datatype, int *count);
/** @brief rma_get_count() with a large count. */
RMA_API int rma_get_count_c(const rma_status *status, rma_datatype datatype, rma_count *count);

/**
 * @brief How many basic elements of @p datatype's type map @p status
 *        describes (MPI_Get_elements): RMA_UNDEFINED if the data ends inside
 *        a basic element or the number does not fit.
 * @return RMA_SUCCESS; RMA_ERR_TYPE; RMA_ERR_ARG (NULL).
 */
RMA_API int rma_get_elements(const rma_status *status, rma_datatype datatype, int *count);
/** @brief rma_get_elements() with a large count. */
RMA_API int rma_get_elements_x(const rma_status *status, rma_datatype datatype, rma_count *count);
/** @brief rma_get_elements() with a large count (MPI-4 name). */
RMA_API int rma_get_elements_c(const rma_status *status, rma_datatype datatype, rma_count *count);

/**
 * @brief Pack @p incount elements of @p datatype at @p inbuf into @p outbuf
 *        (@p outsize bytes) at byte *@p position, and advance *position.
 *
 * The packed form is the data bytes in type-map order (the host's
 * representation); it is read by rma_unpack() or as RMA_PACKED.
 * @return RMA_SUCCESS; RMA_ERR_TYPE (invalid or uncommitted type);
 *         RMA_ERR_COUNT (incount < 0); RMA_ERR_COMM; RMA_ERR_ARG (NULL
 *         position, *position outside 0..outsize); RMA_ERR_TRUNCATE if the
 *         data does not fit (nothing is written).
 */
RMA_API int rma_pack(const void *inbuf, int incount, rma_datatype datatype, void *outbuf, int outsize,
		     int *position, rma_comm comm);
/** @brief rma_pack() with large counts. */
RMA_API int rma_pack_c(const void *inbuf, rma_count incount, rma_datatype datatype, void *outbuf,
		       rma_count outsize, rma_count *position, rma_comm comm);

/**
 * @brief Unpack @p outcount elements of @p datatype into @p outbuf from
 *        @p inbuf (@p insize bytes) at byte *@p position, and advance *position.
 * @return As rma_pack(); RMA_ERR_TRUNCATE if @p inbuf holds less than
 *         the elements need (nothing is written); RMA_ERR_TYPE also for a
 *         type with overlapping entries.
 */
RMA_API int rma_unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
		       rma_datatype datatype, rma_comm comm);
/** @brief rma_unpack() with large counts. */
RMA_API int rma_unpack_c(const void *inbuf, rma_count insize, rma_count *position, void *outbuf,
			 rma_count outcount, rma_datatype datatype, rma_comm comm);

/**
 * @brief Bytes rma_pack() needs for @p incount elements of @p datatype
 *        (RMA_UNDEFINED in *size if it does not fit an int).
 * @return RMA_SUCCESS; RMA_ERR_TYPE; RMA_ERR_COUNT (negative count, or a
 *         size that overflows an rma_count); RMA_ERR_COMM; RMA_ERR_ARG.
 */
RMA_API int rma_pack_size(int incount, rma_datatype datatype, rma_comm comm, int *size);
/**
 * @brief rma_pack_size() with large counts.
 * @return as rma_pack_size(), and RMA_ERR_COUNT when the size overflows an rma_count.
 */
RMA_API int rma_pack_size_c(rma_count incount, rma_datatype datatype, rma_comm comm, rma_count *size);

/* ------------------------------------------------------------------------ */
/* Memory                                                                   */
/* ------------------------------------------------------------------------ */

/**
 * @brief Allocate @p size bytes of shared-memory segment (MPI_Alloc_mem).
 *
 * Windows later created over this memory (rma_win_create, rma_win_attach)
 * are accessed by peers with direct loads and stores. Honours the window
 * info keys "rma_huge_pages" and "rma_placement" (see rma_win_allocate()).
 * @param[out] baseptr  Address of a pointer that receives the memory.
 * @return RMA_SUCCESS; RMA_ERR_SIZE for size < 0; RMA_ERR_NO_MEM if the
 *         memory cannot be reserved; RMA_ERR_INFO_VALUE for a bad info value.
 */
RMA_API int rma_alloc_mem(rma_aint size, rma_info info, void *baseptr);

/**
 * @brief Free memory from rma_alloc_mem(). Peers that still map it (through a
 *        window) keep their mapping until that window is freed.
 * @return RMA_SUCCESS; RMA_ERR_BASE if @p base is not from rma_alloc_mem().
 */
RMA_API int rma_free_mem(void *base);

/* ------------------------------------------------------------------------ */
/* Windows                                                                  */
/*                                                                          */
/* Window info keys understood at creation (and reported by                 */
/* rma_win_get_info): no_locks, accumulate_ordering, accumulate_ops,        */
/* mpi_accumulate_granularity, same_size, same_disp_unit,                   */
/* alloc_shared_noncontig, and librma's own:                                */
/*  - rma_huge_pages = "prefer" (default: 2 MiB pages when the pool has     */
/*    room) | "require" (fail with RMA_ERR_NO_MEM otherwise) | "off";       */
/*  - rma_placement  = "local" (default: the NUMA node of the owning rank)  */
/*    | "interleave" | "node:N" | "none";                                   */
/*  - rma_win_name = NAME (1 to RMA_MAX_OBJECT_NAME-1 characters): names    */
/*    the window from its creation on, as rma_win_set_name() would, and     */
/*    selects the job's policy for windows of that name, which rmarun       */
/*    --placement passes from a placement file's memory.windows in          */
/*    RMA_PLACEMENT_WINDOWS. A window's memory policy is, first to last:    */
/*    its rma_placement key; the job's policy for its rma_win_name;         */
/*    RMA_PLACEMENT (the file's memory.default); "local". With              */
/*    rma_alloc_mem() the key only selects the policy (for the window the   */
/*    memory is meant for). rma_win_set_info() ignores it and               */
/*    rma_win_get_info() does not report it (rma_win_get_name() does);      */
/*  - rma_accumulate_path = "auto" (default: small ops by origin atomics,   */
/*    the rest through the target's ring) | "ring" (every accumulate        */
/*    through the ring, applied with plain vectorized stores: faster for   */
/*    arrays, slower for single elements); one member asking for "ring"     */
/*    makes the whole window ring-only;                                     */
/* and reported only: rma_page_size (bytes of the pages backing this rank's */
/* memory, "0" for size 0), rma_numa_node (node it is bound to, "-1" for    */
/* none or interleaved), rma_memory ("segment", "alloc_mem" or "process":   */
/* how peers reach this rank's memory), rma_progress ("none", "thread" or   */
/* "agent": who drains accumulate rings, from RMA_PROGRESS / rmarun),       */
/* rma_progress_server (who drains this rank's ring: "thread", its own      */
/* progress thread; "agent:R", the agent of its memory's NUMA node, in      */
/* world rank R; "origins", only origins waiting for completion).           */
/* ------------------------------------------------------------------------ */

/**
 * @brief Expose @p size bytes at @p base to RMA by the members of @p comm (collective).
 *
 * Memory from rma_alloc_mem() is reached by peers with loads and stores;
 * any other memory is reached through cross-memory attach, with the same
 * semantics and no call needed from the target.
 * @return RMA_SUCCESS; RMA_ERR_COMM; RMA_ERR_SIZE for size < 0;
 *         RMA_ERR_DISP for disp_unit <= 0; RMA_ERR_ARG for base NULL with size > 0;
 *         RMA_ERR_INFO_VALUE for a bad info value.
 */
RMA_API int rma_win_create(void *base, rma_aint size, int disp_unit, rma_info info, rma_comm comm,
			   rma_win *win);

/**
 * @brief Allocate @p size bytes of window memory and create a window over it (collective).
 *
 * Each rank's memory is its own memfd segment, bound to the rank's NUMA node
 * before first touch (rma_placement), on 2 MiB pages when the host's pool
 * has room (rma_huge_pages), reserved in full before the call returns, and
 * mapped by every process of the window. Memory is zero-filled.
 * @param[out] baseptr  Address of a pointer that receives this rank's base.
 * @return As rma_win_create(); RMA_ERR_NO_MEM if the memory cannot be reserved.
 */
RMA_API int rma_win_allocate(rma_aint size, int disp_unit, rma_info info, rma_comm comm, void *baseptr,
			     rma_win *win);

/**
 * @brief Like rma_win_allocate(), but the ranks' memories are one contiguous
 *        segment (rank i+1's memory follows rank i's) unless info sets
 *        alloc_shared_noncontig=true; rma_win_shared_query() gives each
 *        rank's base in this process.
 * @return As rma_win_allocate().
 */
RMA_API int rma_win_allocate_shared(rma_aint size, int disp_unit, rma_info info, rma_comm comm,
				    void *baseptr, rma_win *win);

/**
 * @brief Where rank @p rank's memory of a window is mapped in this process.
 *
 * Valid for every flavor but dynamic (MPI-4.1). Memory of allocate and
 * allocate_shared windows, and of create windows over rma_alloc_mem memory,
 * is mapped here: the real pointer, size and disp_unit. Memory of a create
 * window over other memory of another process (reached through cross-memory
 * attach) cannot be loaded or stored here: size 0, a NULL pointer, its
 * disp_unit, and RMA_SUCCESS. For RMA_PROC_NULL, the mapped memory of the
 * lowest rank with size > 0 (size 0 and NULL if none).
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_RANK; RMA_ERR_RMA_FLAVOR for dynamic windows.
 */
RMA_API int rma_win_shared_query(rma_win win, int rank, rma_aint *size, int *disp_unit, void *baseptr);

/**
 * @brief Create a window with no memory (collective); memory is attached later.
 *        target_disp of operations on it is an absolute address (rma_get_address()).
 */
RMA_API int rma_win_create_dynamic(rma_info info, rma_comm comm, rma_win *win);

/**
 * @brief Expose [base, base+size) through a dynamic window (local call).
 *
 * Regions may be adjacent to or overlap regions already attached: an
 * operation's target range may cross any number of them, as long as their
 * union covers it (a range over unattached bytes is RMA_ERR_RMA_RANGE,
 * naming the first such address). Peers may access the region once they
 * have synchronized with this process after the call. The lookup costs
 * O(log regions) plus the regions a range spans.
 * @return RMA_SUCCESS; RMA_ERR_RMA_FLAVOR if not dynamic; RMA_ERR_SIZE;
 *         RMA_ERR_RMA_ATTACH for a NULL base, a range that wraps around the
 *         address space, or too many regions (1024).
 */
RMA_API int rma_win_attach(rma_win win, void *base, rma_aint size);

/**
 * @brief Stop exposing the region attached at @p base (local call). A region
 *        attached several times at one base is detached one attachment per call.
 *
 * Operations still in flight to the region are erroneous (MPI), but one from
 * another host never writes the memory after this call returns: the call
 * waits for such an operation that is being applied (microseconds), and later
 * ones fail at their origin with RMA_ERR_RMA_RANGE.
 * @return RMA_SUCCESS; RMA_ERR_RMA_FLAVOR if not dynamic; RMA_ERR_RMA_ATTACH if
 *         no region starts at @p base; RMA_ERR_PROC_FAILED if the region is
 *         detached but the process of this host that was applying another
 *         host's operation to it died during the copy (noticed within 0.1 s).
 */
RMA_API int rma_win_detach(rma_win win, const void *base);

/**
 * @brief Free a window (collective); sets *win to RMA_WIN_NULL.
 *
 * Returns when every member has called it, so no peer accesses the memory
 * afterwards. Memory from rma_win_allocate(_shared) is released.
 * If a member has died, the window is released here without waiting for
 * the others (open epochs included), *win is set to RMA_WIN_NULL, and the
 * call returns RMA_ERR_PROC_FAILED (through the window's error handler).
 *
 * First, before any communication and while @p win is still valid, the
 * delete callback of every attribute cached on the window runs, newest
 * first (the reverse of the order they were set). If one fails, the call
 * returns RMA_ERR_OTHER at once: that attribute and the older ones stay,
 * the window is not freed, and the peers wait in their rma_win_free until
 * this process calls it again (as MPI makes such a program erroneous).
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_RMA_SYNC if this process has
 *         operations that no synchronization has completed yet;
 *         RMA_ERR_OTHER if a delete callback fails; RMA_ERR_PROC_FAILED as above.
 */
RMA_API int rma_win_free(rma_win *win);

/* ---- Window attributes and keyvals (MPI's caching) ----------------------- */
/*
 * An application caches a pointer-sized value on a window under a keyval it
 * made with rma_win_create_keyval(); the predefined keyvals RMA_WIN_BASE ...
 * RMA_WIN_MODEL are read-only. Every call here is local and completes before
 * returning; callbacks run in the calling thread, and may call librma
 * (except to set or delete attributes of the window whose callback runs).
 */

/**
 * Copy callback of a window keyval (MPI_Win_copy_attr_function). Windows
 * are never duplicated, so librma never calls it; it is kept for MPI's
 * signature.
 */
typedef int rma_win_copy_attr_function(rma_win oldwin, int win_keyval, void *extra_state,
				       void *attribute_val_in, void *attribute_val_out, int *flag);
/**
 * Delete callback of a window keyval (MPI_Win_delete_attr_function): called
 * with the value when the attribute is deleted, replaced, or its window
 * freed. Return RMA_SUCCESS; any other value makes that call fail.
 */
typedef int rma_win_delete_attr_function(rma_win win, int win_keyval, void *attribute_val, void *extra_state);

/** @brief The copy callback that copies nothing (*flag = 0); always RMA_SUCCESS. */
RMA_API int rma_win_null_copy_fn(rma_win oldwin, int win_keyval, void *extra_state, void *attribute_val_in,
				 void *attribute_val_out, int *flag);
/** @brief The copy callback that copies the value (*flag = 1); always RMA_SUCCESS. */
RMA_API int rma_win_dup_fn(rma_win oldwin, int win_keyval, void *extra_state, void *attribute_val_in,
			   void *attribute_val_out, int *flag);
/** @brief The delete callback that does nothing; always RMA_SUCCESS. */
RMA_API int rma_win_null_delete_fn(rma_win win, int win_keyval, void *attribute_val, void *extra_state);
#define RMA_WIN_NULL_COPY_FN rma_win_null_copy_fn
#define RMA_WIN_DUP_FN rma_win_dup_fn
#define RMA_WIN_NULL_DELETE_FN rma_win_null_delete_fn

/**
 * @brief A new window keyval (MPI_Win_create_keyval).
 * @param[in] win_copy_attr_fn    Copy callback (NULL means RMA_WIN_NULL_COPY_FN).
 * @param[in] win_delete_attr_fn  Delete callback (NULL means RMA_WIN_NULL_DELETE_FN).
 * @param[out] win_keyval         The keyval: a positive number, never
 *                                RMA_KEYVAL_INVALID nor a predefined key,
 *                                never handed out again in this process.
 * @param[in] extra_state         Passed to both callbacks.
 * @return RMA_SUCCESS; RMA_ERR_ARG for a NULL @p win_keyval; RMA_ERR_NO_MEM
 *         when 2^24 keyvals have been made (errors go to RMA_COMM_SELF).
 */
RMA_API int rma_win_create_keyval(rma_win_copy_attr_function *win_copy_attr_fn,
				  rma_win_delete_attr_function *win_delete_attr_fn, int *win_keyval, void *extra_state);

/**
 * @brief Free a window keyval; sets *win_keyval to RMA_KEYVAL_INVALID.
 *
 * Attributes already set with it stay until deleted or their window is
 * freed (their delete callback still runs then), and until then the keyval
 * may still be used to get or delete them; it can no longer set one.
 * @return RMA_SUCCESS; RMA_ERR_ARG for NULL; RMA_ERR_KEYVAL for a predefined,
 *         freed or unknown keyval (errors go to RMA_COMM_SELF).
 */
RMA_API int rma_win_free_keyval(int *win_keyval);

/**
 * @brief Cache @p attribute_val on @p win under @p win_keyval (MPI_Win_set_attr).
 *
 * A value already set under the keyval is deleted first (its delete
 * callback runs); if that callback fails, the old value stays and the call
 * fails.
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_KEYVAL for a predefined, freed or
 *         unknown keyval; RMA_ERR_OTHER if the delete callback of the old
 *         value fails (the message gives its return value).
 */
RMA_API int rma_win_set_attr(rma_win win, int win_keyval, void *attribute_val);

/**
 * @brief An attribute of @p win (MPI_Win_get_attr): *(void **)@p attribute_val
 *        receives the value and *@p flag 1, or *@p flag is 0 if none is set.
 *
 * For the predefined keyvals the value is a pointer: void* for RMA_WIN_BASE
 * (RMA_BOTTOM for a dynamic window), rma_aint* for RMA_WIN_SIZE (0 for
 * dynamic), int* for RMA_WIN_DISP_UNIT, RMA_WIN_CREATE_FLAVOR and
 * RMA_WIN_MODEL; they are always set. For a keyval of
 * rma_win_create_keyval() it is the pointer that was set.
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_ARG for NULL outputs;
 *         RMA_ERR_KEYVAL for a keyval that is neither predefined nor a live
 *         (or still referenced) window keyval (*@p flag is set to 0 then).
 */
RMA_API int rma_win_get_attr(rma_win win, int win_keyval, void *attribute_val, int *flag);

/**
 * @brief Delete the attribute @p win_keyval of @p win (MPI_Win_delete_attr):
 *        its delete callback runs, then the value is gone.
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_KEYVAL for a predefined or unknown
 *         keyval, or one with no value on @p win; RMA_ERR_OTHER if the delete
 *         callback fails (the attribute then stays).
 */
RMA_API int rma_win_delete_attr(rma_win win, int win_keyval);

/** @brief The group of a window (free it with rma_group_free). */
RMA_API int rma_win_get_group(rma_win win, rma_group *group);

/**
 * @brief Change hints of a window (collective). Keys that cannot change after
 *        creation are ignored, as MPI allows.
 */
RMA_API int rma_win_set_info(rma_win win, rma_info info);
/** @brief A new info object with every hint in force on @p win (free it). */
RMA_API int rma_win_get_info(rma_win win, rma_info *info_used);
/** @brief Name a window (used in error messages). RMA_ERR_ARG if longer than RMA_MAX_OBJECT_NAME-1. */
RMA_API int rma_win_set_name(rma_win win, const char *win_name);
/** @brief A window's name (default "win#N"); @p resultlen gets its length. */
RMA_API int rma_win_get_name(rma_win win, char *win_name, int *resultlen);

/* ------------------------------------------------------------------------ */
/* Communication                                                            */
/* ------------------------------------------------------------------------ */

/**
 * @brief Write origin_count elements of origin_datatype at origin_addr to
 *        target_rank's window at base + target_disp * disp_unit.
 *
 * Same-host targets are written with direct stores. The whole target
 * footprint is checked against the target window at the origin.
 * Completion: the data is visible at the target and the origin buffer
 * reusable after the synchronization that ends the epoch (fence).
 * RMA_PROC_NULL as target is a no-op (still requires an epoch).
 * An operation that moves no bytes (count 0, or types of size 0) succeeds
 * once the window, the rank and the epoch are checked, whatever its types.
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_RANK; RMA_ERR_COUNT (negative
 *         count); RMA_ERR_TYPE (invalid datatype or signatures that do not
 *         match); RMA_ERR_TRUNCATE (origin data larger than the target
 *         buffer); RMA_ERR_DISP (negative displacement);
 *         RMA_ERR_RMA_RANGE (footprint outside the target window);
 *         RMA_ERR_RMA_SYNC (no access epoch open); RMA_ERR_BUFFER (the first
 *         byte the origin datatype touches is NULL or in the first page:
 *         NULL, or NULL plus a small offset; other wild pointers cannot all
 *         be caught and fault like any bad pointer). Nothing is written on
 *         error. The same buffer rule holds for every buffer of the
 *         accumulate family, the request forms, rma_pack and rma_unpack.
 */
RMA_API int rma_put(const void *origin_addr, int origin_count, rma_datatype origin_datatype, int target_rank,
		    rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_win win);

/**
 * @brief Read target_count elements of target_datatype from target_rank's
 *        window into origin_addr.
 *
 * Completion: the data is in the origin buffer after the synchronization that
 * ends the epoch. Errors as rma_put() (RMA_ERR_TRUNCATE when the target data
 * is larger than the origin buffer).
 */
RMA_API int rma_get(void *origin_addr, int origin_count, rma_datatype origin_datatype, int target_rank,
		    rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_win win);

/**
 * @brief Fence: complete every RMA operation this process issued on @p win
 *        and start the next epoch (collective over the window's group).
 *
 * On return, operations issued before the fence by any member are complete
 * at their targets and origins. @p assert may combine RMA_MODE_NOSTORE,
 * NOPUT, NOPRECEDE (no operation was issued since the last fence; checked)
 * and NOSUCCEED (no operation follows: the epoch closes).
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_ASSERT for unknown bits;
 *         RMA_ERR_RMA_SYNC if NOPRECEDE is asserted after local operations.
 */
RMA_API int rma_win_fence(int assert, rma_win win);

/**
 * @brief Synchronize the private and public copies of the window (a full
 *        memory barrier; librma windows are unified). Valid in any epoch.
 */
RMA_API int rma_win_sync(rma_win win);

/* ------------------------------------------------------------------------ */
/* Generalized active target (post / start / complete / wait)               */
/*                                                                          */
/* Signalling goes through per-pair counters in the window's control        */
/* segment: post and start cost O(group size), never O(window size).        */
/* ------------------------------------------------------------------------ */

/**
 * @brief Open an exposure epoch for the members of @p group (local; does not wait).
 *
 * Origins in @p group may access this process's window after their
 * matching rma_win_start(). @p assert: RMA_MODE_NOCHECK, NOSTORE, NOPUT.
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_GROUP (a member is not in the
 *         window); RMA_ERR_ASSERT; RMA_ERR_RMA_SYNC if an exposure epoch is
 *         already open or a fence epoch with operations is.
 */
RMA_API int rma_win_post(rma_group group, int assert, rma_win win);

/**
 * @brief Open an access epoch to the members of @p group; waits until each
 *        has posted an exposure epoch that includes this process (not with
 *        RMA_MODE_NOCHECK, which asserts that the posts already happened).
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_GROUP; RMA_ERR_ASSERT;
 *         RMA_ERR_RMA_SYNC if another access epoch is open;
 *         RMA_ERR_PROC_FAILED if a target died while this process waited.
 */
RMA_API int rma_win_start(rma_group group, int assert, rma_win win);

/**
 * @brief Close the access epoch of rma_win_start(). On return every RMA
 *        operation of the epoch is complete at the origin; each target sees
 *        them once its rma_win_wait() (or a successful rma_win_test()) returns.
 *        Does not wait for the targets.
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_RMA_SYNC without a matching start.
 */
RMA_API int rma_win_complete(rma_win win);

/**
 * @brief Close the exposure epoch of rma_win_post(): waits until every origin
 *        of the post group has called rma_win_complete(); their operations
 *        are then visible in this window.
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_RMA_SYNC without a matching post;
 *         RMA_ERR_PROC_FAILED if an origin died while this process waited.
 */
RMA_API int rma_win_wait(rma_win win);

/**
 * @brief rma_win_wait() that does not block: *flag = 1 and the epoch closed
 *        if every origin completed, else *flag = 0 and nothing changes.
 * @return As rma_win_wait().
 */
RMA_API int rma_win_test(rma_win win, int *flag);

/* ------------------------------------------------------------------------ */
/* Passive target (lock / unlock / flush)                                   */
/*                                                                          */
/* Locks are words in the window's control segment, taken and released by  */
/* the origin with atomic instructions: the target process never has to     */
/* call librma. Exclusive lockers are preferred: a stream of shared lockers */
/* cannot starve them. rma_win_lock_all costs one atomic, not one per rank. */
/* ------------------------------------------------------------------------ */

/**
 * @brief Start an access epoch to @p rank under a shared or exclusive lock;
 *        returns once the lock is held (immediately with RMA_MODE_NOCHECK,
 *        which asserts that no conflicting lock is or will be requested).
 *
 * A target on another host (a window that spans hosts) is locked lazily, as
 * MPI allows: the call queues the request and returns; the epoch's
 * operations follow it, and that host applies none of them before the lock
 * is granted. So lock, operations and unlock take one round trip. A
 * refusal (a process that held or waited for the lock died) is reported by
 * the next call that waits for that host (flush, unlock, a get's
 * completion), and the epoch's operations are refused with it.
 *
 * Several targets may be locked at once; one target only once.
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_LOCKTYPE; RMA_ERR_RANK;
 *         RMA_ERR_ASSERT; RMA_ERR_RMA_SYNC if @p rank is already locked by
 *         this process, lock_all or a PSCW access epoch is open, a fence
 *         epoch with operations is open, or the window has no_locks=true;
 *         RMA_ERR_PROC_FAILED if a process died while this one waited.
 */
RMA_API int rma_win_lock(int lock_type, int rank, int assert, rma_win win);

/**
 * @brief Complete every operation to @p rank (at origin and target) and release its lock.
 *
 * For a target on another host, an error its host met applying an operation
 * of the epoch (or refusing the lazy lock) is reported here if no earlier
 * call reported it; the epoch ends all the same and the lock is released.
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_RANK; RMA_ERR_RMA_SYNC if this
 *         process does not hold a lock on @p rank; RMA_ERR_PROC_FAILED if
 *         @p rank died (the epoch ends all the same); another host's error
 *         class for an operation it refused (e.g. RMA_ERR_RMA_RANGE outside a
 *         dynamic window's attached memory).
 */
RMA_API int rma_win_unlock(int rank, rma_win win);

/**
 * @brief A shared lock on every rank of the window, in one atomic operation.
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_ASSERT; RMA_ERR_RMA_SYNC if any
 *         other access epoch is open or the window has no_locks=true;
 *         RMA_ERR_PROC_FAILED as rma_win_lock().
 */
RMA_API int rma_win_lock_all(int assert, rma_win win);

/**
 * @brief Complete every operation and end the lock_all epoch.
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_RMA_SYNC without lock_all;
 *         RMA_ERR_PROC_FAILED if a member died (the epoch ends all the same).
 */
RMA_API int rma_win_unlock_all(rma_win win);

/**
 * @brief Complete every operation this process issued to @p rank, at the
 *        origin and at the target, without ending the epoch.
 * @return RMA_SUCCESS; RMA_ERR_WIN; RMA_ERR_RANK; RMA_ERR_RMA_SYNC if no
 *         lock or lock_all epoch covers @p rank.
 */
RMA_API int rma_win_flush(int rank, rma_win win);
/** @brief rma_win_flush() for every target. RMA_ERR_RMA_SYNC outside a passive-target epoch. */
RMA_API int rma_win_flush_all(rma_win win);
/** @brief Complete every operation to @p rank at the origin (buffers reusable). Errors as rma_win_flush(). */
RMA_API int rma_win_flush_local(int rank, rma_win win);
/** @brief rma_win_flush_local() for every target. */
RMA_API int rma_win_flush_local_all(rma_win win);

/* ------------------------------------------------------------------------ */
/* Accumulate family                                                         */
/* ------------------------------------------------------------------------ */
/*
 * Every call below is atomic per basic element (per pair for MAXLOC/MINLOC)
 * with respect to every other accumulate-family call on the same window
 * element, from any origin; put/get are not atomic with them. Each datatype
 * argument is a predefined type, or a derived type whose basic elements are
 * all of one predefined type (one pair type for MAXLOC/MINLOC), and origin,
 * target and result types must share it. Between one origin and one target,
 * calls are ordered as the accumulate_ordering info key says (default
 * "rar,raw,war,waw"; "none" lifts it).
 *
 * Completion: the origin buffer may be reused when the call returns; the
 * operation is complete at the target, and fetched values are in the result
 * buffer, after the synchronization that ends or flushes the epoch
 * (fence, complete, unlock, unlock_all, flush*), or when the request of the
 * r* forms completes. Single elements of types with hardware atomics are
 * done by the origin with atomic instructions; the rest is queued on the
 * target's ring and applied by a progress agent (or by the origin itself
 * while it waits for completion), never by the target process's own thread.
 * A contiguous operation larger than 16 bytes is applied in place by the
 * origin when no one else is applying to that target; it may make one
 * membarrier() system call, after which a run of such operations within
 * 20 us makes none. Operations done by origin atomics make no system
 * call; a queued one wakes a parked progress thread (one futex call) at most.
 *
 * Errors (as rma_put(), plus): RMA_ERR_OP for RMA_OP_NULL, an unknown op, or
 * an op not defined on the type (the message names both); RMA_ERR_TYPE when
 * the types mix basic types or differ between the arguments;
 * RMA_ERR_RMA_RANGE when the target footprint leaves the window.
 */

/**
 * @brief Combine @p origin_count x @p origin_datatype with the target's
 *        @p target_count x @p target_datatype at @p target_disp using @p op
 *        (RMA_REPLACE: an atomic put; RMA_NO_OP: nothing).
 */
RMA_API int rma_accumulate(const void *origin_addr, int origin_count, rma_datatype origin_datatype, int target_rank,
			   rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_op op,
			   rma_win win);

/**
 * @brief Fetch the target's data into @p result_addr (@p result_count x
 *        @p result_datatype), then combine the origin's into it with @p op,
 *        atomically per element. With RMA_NO_OP the origin buffer is ignored
 *        (an atomic get).
 */
RMA_API int rma_get_accumulate(const void *origin_addr, int origin_count, rma_datatype origin_datatype,
			       void *result_addr, int result_count, rma_datatype result_datatype, int target_rank,
			       rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_op op,
			       rma_win win);

/**
 * @brief rma_get_accumulate() of one element of predefined @p datatype: the
 *        target's value goes to @p result_addr, then becomes
 *        op(value, *origin_addr). @p origin_addr is ignored for RMA_NO_OP.
 */
RMA_API int rma_fetch_and_op(const void *origin_addr, void *result_addr, rma_datatype datatype, int target_rank,
			     rma_aint target_disp, rma_op op, rma_win win);

/**
 * @brief Atomically: *result_addr = target value; if it equals *compare_addr,
 *        the target value becomes *origin_addr. One element of an integer,
 *        logical (C_BOOL) or byte type; other types give RMA_ERR_TYPE.
 */
RMA_API int rma_compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
				 rma_datatype datatype, int target_rank, rma_aint target_disp, rma_win win);

/**
 * @brief rma_accumulate() returning a request that completes when the origin
 *        buffer may be reused. Inside passive-target epochs only (as rma_rput()).
 */
RMA_API int rma_raccumulate(const void *origin_addr, int origin_count, rma_datatype origin_datatype,
			    int target_rank, rma_aint target_disp, int target_count, rma_datatype target_datatype,
			    rma_op op, rma_win win, rma_request *request);

/**
 * @brief rma_get_accumulate() returning a request that completes when the
 *        fetched data is in the result buffer.
 */
RMA_API int rma_rget_accumulate(const void *origin_addr, int origin_count, rma_datatype origin_datatype,
				void *result_addr, int result_count, rma_datatype result_datatype, int target_rank,
				rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_op op,
				rma_win win, rma_request *request);

/* ------------------------------------------------------------------------ */
/* Request-based operations (inside passive-target epochs only, as in MPI)  */
/* ------------------------------------------------------------------------ */

/**
 * @brief rma_put() that also returns a request; it completes when the origin
 *        buffer may be reused (rma_win_flush completes the operation at the
 *        target). Errors as rma_put(), plus RMA_ERR_RMA_SYNC outside a lock or
 *        lock_all epoch covering the target; RMA_ERR_ARG if @p request is NULL.
 */
RMA_API int rma_rput(const void *origin_addr, int origin_count, rma_datatype origin_datatype, int target_rank,
		     rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_win win,
		     rma_request *request);

/**
 * @brief rma_get() that also returns a request; it completes when the data is
 *        in the origin buffer. Errors as rma_rput(). For a target on another
 *        host, an error its host met serving the get (an address outside
 *        the window, a dead target) is reported by this request's
 *        rma_wait()/rma_test() only, not by a flush or unlock.
 */
RMA_API int rma_rget(void *origin_addr, int origin_count, rma_datatype origin_datatype, int target_rank,
		     rma_aint target_disp, int target_count, rma_datatype target_datatype, rma_win win,
		     rma_request *request);

/**
 * @brief Wait for a request to complete and free it (*request becomes
 *        RMA_REQUEST_NULL; waiting on RMA_REQUEST_NULL returns at once).
 *        RMA requests carry no status information: @p status (may be
 *        RMA_STATUS_IGNORE) is not written.
 * @return RMA_SUCCESS; RMA_ERR_REQUEST for an invalid request. An
 *         rma_rget()/rma_rget_accumulate() to another host that its host
 *         refused completes with that error (RMA_ERR_RMA_RANGE,
 *         RMA_ERR_PROC_FAILED, ...) and is freed, as it is when a reply it needs
 *         can never come (that host's link is lost: RMA_ERR_PROC_FAILED);
 *         a host silent past RMA_NET_TIMEOUT_MS gives RMA_ERR_PROC_FAILED and
 *         leaves the request live.
 */
RMA_API int rma_wait(rma_request *request, rma_status *status);

/**
 * @brief Like rma_wait() without blocking: *flag = 1 (and the request freed) if
 *        complete. A request that completed with an error returns it (and is
 *        freed) as rma_wait() does; one to a host silent past
 *        RMA_NET_TIMEOUT_MS returns RMA_ERR_PROC_FAILED and stays live.
 */
RMA_API int rma_test(rma_request *request, int *flag, rma_status *status);

/**
 * @brief rma_wait() on each of @p count requests, every one even past one that
 *        failed; returns the first error. RMA_ERR_REQUEST if any is invalid
 *        (none is waited for then).
 */
RMA_API int rma_waitall(int count, rma_request array_of_requests[], rma_status *array_of_statuses);

/**
 * @brief *flag = 1 and all freed if every request is complete (the first
 *        error of one that completed with an error is returned); else
 *        *flag = 0 and none is freed.
 */
RMA_API int rma_testall(int count, rma_request array_of_requests[], int *flag, rma_status *array_of_statuses);

/**
 * @brief Free a request without waiting; the operation still completes with
 *        the epoch. An error it meets (a refusal by another host) is then
 *        reported by the next call to that host, as for rma_get().
 */
RMA_API int rma_request_free(rma_request *request);

#ifdef __cplusplus
}
#endif

#endif /* RMA_RMA_H */
