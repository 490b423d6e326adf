/*
 * mpi.h over hccl.h: the subset of MPI that mpibench.c calls, on
 * libhccl.so, so that the MPI twin of hcclrun bench also measures the
 * runtime through its C interface, with the same program:
 *
 *   cc -O2 -I bench/mpi/onhccl bench/mpi/mpibench.c $(pkg-config --cflags --libs hccl)
 *   hcclrun -np 2 ./a.out -o allreduce -b 8 -e 1M
 *
 * Each call maps onto one hccl call, except where MPI's in-place forms put
 * data elsewhere than hccl's: MPI_Reduce_scatter_block in place leaves the
 * rank's block at the start of the buffer (one memmove after the call) and
 * MPI_Alltoallv takes int counts (converted into size_t arrays kept from
 * call to call). Errors are fatal, as under MPI_ERRORS_ARE_FATAL: the
 * message is printed and the job aborted. Not a general MPI: one
 * communicator, no statuses, no requests.
 */
#ifndef HCCL_ONHCCL_MPI_H_
#define HCCL_ONHCCL_MPI_H_

#include <hccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef hcclDataType_t MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Comm;
typedef long MPI_Aint;
typedef int MPI_Info;

#define MPI_COMM_WORLD 0
#define MPI_IN_PLACE ((void *)1)
#define MPI_OP_NULL (-1)
#define MPI_SUM ((MPI_Op)hcclSum)
#define MPI_PROD ((MPI_Op)hcclProd)
#define MPI_MAX ((MPI_Op)hcclMax)
#define MPI_MIN ((MPI_Op)hcclMin)
#define MPI_FLOAT hcclFloat32
#define MPI_DOUBLE hcclFloat64
#define MPI_INT8_T hcclInt8
#define MPI_UINT8_T hcclUint8
#define MPI_INT32_T hcclInt32
#define MPI_INT64_T hcclInt64
#define MPI_LONG_LONG hcclInt64
#define MPI_CHAR hcclInt8
#define MPI_INFO_NULL 0
#define MPI_SUCCESS 0

static hcclComm_t onhccl_comm;
static int onhccl_rank, onhccl_size;

static void onhccl_check(hcclResult_t r, const char *call) {
	if (r == hcclSuccess) return;
	fprintf(stderr, "rank %d: %s: %s: %s\n", onhccl_rank, call, hcclGetErrorString(r), hcclCommGetLastError(onhccl_comm));
	if (onhccl_comm) hcclCommAbort(onhccl_comm);
	exit(1);
}
#define ONHCCL(call) onhccl_check((call), #call)

static size_t onhccl_sizeof(MPI_Datatype t) {
	switch (t) {
	case hcclInt8: case hcclUint8: return 1;
	case hcclFloat16: case hcclBfloat16: case hcclInt16: case hcclUint16: return 2;
	case hcclInt32: case hcclUint32: case hcclFloat32: return 4;
	default: return 8;
	}
}

static inline int MPI_Init(int *argc, char ***argv) {
	(void)argc, (void)argv;
	ONHCCL(hcclCommInitFromEnv(&onhccl_comm));
	ONHCCL(hcclCommRank(onhccl_comm, &onhccl_rank));
	ONHCCL(hcclCommCount(onhccl_comm, &onhccl_size));
	return 0;
}

static inline int MPI_Finalize(void) {
	ONHCCL(hcclCommDestroy(onhccl_comm));
	onhccl_comm = NULL;
	return 0;
}

static inline int MPI_Comm_rank(MPI_Comm c, int *r) { (void)c, *r = onhccl_rank; return 0; }
static inline int MPI_Comm_size(MPI_Comm c, int *n) { (void)c, *n = onhccl_size; return 0; }

static inline int MPI_Abort(MPI_Comm c, int code) {
	(void)c;
	if (onhccl_comm) hcclCommAbort(onhccl_comm);
	exit(code);
}

static inline double MPI_Wtime(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int MPI_Barrier(MPI_Comm c) {
	(void)c;
	ONHCCL(hcclBarrier(onhccl_comm));
	return 0;
}

/* MPI_Alloc_mem is hcclMemAlloc: memory the host's peers map. */
static inline int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr) {
	(void)info;
	ONHCCL(hcclMemAlloc((void **)baseptr, (size_t)size));
	return 0;
}

static inline int MPI_Free_mem(void *base) {
	ONHCCL(hcclMemFree(base));
	return 0;
}

static inline int MPI_Allreduce(const void *in, void *out, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
	(void)c;
	ONHCCL(hcclAllReduce(in == MPI_IN_PLACE ? out : in, out, (size_t)n, t, (hcclRedOp_t)op, onhccl_comm));
	return 0;
}

static inline int MPI_Reduce(const void *in, void *out, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
	(void)c;
	ONHCCL(hcclReduce(in == MPI_IN_PLACE ? out : in, out, (size_t)n, t, (hcclRedOp_t)op, root, onhccl_comm));
	return 0;
}

static inline int MPI_Bcast(void *buf, int n, MPI_Datatype t, int root, MPI_Comm c) {
	(void)c;
	ONHCCL(hcclBcast(buf, (size_t)n, t, root, onhccl_comm));
	return 0;
}

/* In place, the rank's block is already at its place in out. */
static inline int MPI_Allgather(const void *in, int n, MPI_Datatype t, void *out, int rn, MPI_Datatype rt, MPI_Comm c) {
	(void)rn, (void)rt, (void)c;
	const void *send = in == MPI_IN_PLACE ? (char *)out + (size_t)onhccl_rank * n * onhccl_sizeof(t) : in;
	ONHCCL(hcclAllGather(send, out, (size_t)n, t, onhccl_comm));
	return 0;
}

static inline int MPI_Reduce_scatter_block(const void *in, void *out, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
	(void)c;
	if (in != MPI_IN_PLACE) {
		ONHCCL(hcclReduceScatter(in, out, (size_t)n, t, (hcclRedOp_t)op, onhccl_comm));
		return 0;
	}
	size_t block = (size_t)n * onhccl_sizeof(t);
	char *mine = (char *)out + (size_t)onhccl_rank * block;
	ONHCCL(hcclReduceScatter(out, mine, (size_t)n, t, (hcclRedOp_t)op, onhccl_comm));
	memmove(out, mine, block);
	return 0;
}

static inline int MPI_Alltoall(const void *in, int n, MPI_Datatype t, void *out, int rn, MPI_Datatype rt, MPI_Comm c) {
	(void)rn, (void)rt, (void)c;
	ONHCCL(hcclAlltoAll(in, out, (size_t)n, t, onhccl_comm));
	return 0;
}

static inline int MPI_Alltoallv(const void *in, const int *sc, const int *sd, MPI_Datatype t, void *out, const int *rc,
                                const int *rd, MPI_Datatype rt, MPI_Comm c) {
	(void)rt, (void)c;
	static size_t *v;
	if (!v && !(v = malloc(4 * sizeof *v * (size_t)onhccl_size))) MPI_Abort(c, 2);
	size_t n = (size_t)onhccl_size;
	for (size_t j = 0; j < n; j++)
		v[j] = (size_t)sc[j], v[n + j] = (size_t)sd[j], v[2 * n + j] = (size_t)rc[j], v[3 * n + j] = (size_t)rd[j];
	ONHCCL(hcclAlltoAllV(in, v, v + n, out, v + 2 * n, v + 3 * n, t, onhccl_comm));
	return 0;
}

/* Only at the end of mpibench: an AllGather into scratch, kept on root. */
static inline int MPI_Gather(const void *in, int n, MPI_Datatype t, void *out, int rn, MPI_Datatype rt, int root, MPI_Comm c) {
	(void)rn, (void)rt, (void)c;
	size_t block = (size_t)n * onhccl_sizeof(t);
	char *all = malloc(block * (size_t)onhccl_size);
	if (!all) MPI_Abort(c, 2);
	ONHCCL(hcclAllGather(in, all, (size_t)n, t, onhccl_comm));
	if (onhccl_rank == root) memcpy(out, all, block * (size_t)onhccl_size);
	free(all);
	return 0;
}

#endif /* HCCL_ONHCCL_MPI_H_ */
