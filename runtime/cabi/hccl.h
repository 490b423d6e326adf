/*
 * hccl.h: the C interface of hcclrun's runtime (libhccl.so).
 *
 * It mirrors nccl.h with the prefix hccl: a program that hcclrun started
 * joins its job with hcclCommInitFromEnv and runs the collectives with
 * NCCL's argument order, (sendbuff, recvbuff, count, datatype, [op,]
 * [root,] comm). Counts are in elements. Every call blocks until this
 * rank's part is done (there are no streams) and is bounded by
 * HCCL_EXEC_TIMEOUT. Every function returns an hcclResult_t and none
 * aborts the process on bad input; hcclCommGetLastError gives the whole
 * message of a failure (which rank, which peer, what was expected).
 *
 *   cc prog.c $(pkg-config --cflags --libs hccl)     # or -I... -L... -lhccl
 *   hcclrun -np 4 ./a.out
 *
 * A communicator's calls are serialised; calls on different communicators
 * may run on different threads at once.
 */
#ifndef HCCL_H_
#define HCCL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HCCL_MAJOR 1
#define HCCL_MINOR 0
#define HCCL_PATCH 0
#define HCCL_VERSION_CODE (HCCL_MAJOR * 10000 + HCCL_MINOR * 100 + HCCL_PATCH)

/* One code per kind of error of the Go API (runtime.ErrInvalidArgument, ...). */
typedef enum {
	hcclSuccess = 0,
	hcclInvalidArgument = 1, /* bad arguments on this rank: nothing was sent */
	hcclMismatch = 2,        /* ranks called different collectives or counts */
	hcclAborted = 3,         /* the job was aborted: a peer failed or called abort */
	hcclTimeout = 4,         /* HCCL_EXEC_TIMEOUT or HCCL_CONNECT_TIMEOUT passed */
	hcclClosed = 5,          /* the communicator was destroyed */
	hcclSystemError = 6,     /* the system failed: a socket, shared memory, the launcher */
	hcclInternalError = 7,   /* a bug in hcclrun: please report the message */
	hcclNumResults = 8
} hcclResult_t;

/* The element types: NCCL's numbering, then the two 16-bit integers NCCL lacks. */
typedef enum {
	hcclInt8 = 0,
	hcclChar = 0,
	hcclUint8 = 1,
	hcclInt32 = 2,
	hcclInt = 2,
	hcclUint32 = 3,
	hcclInt64 = 4,
	hcclUint64 = 5,
	hcclFloat16 = 6,
	hcclHalf = 6,
	hcclFloat32 = 7,
	hcclFloat = 7,
	hcclFloat64 = 8,
	hcclDouble = 8,
	hcclBfloat16 = 9,
	hcclInt16 = 10,
	hcclUint16 = 11,
	hcclNumTypes = 12
} hcclDataType_t;

/* The reductions; integers wrap, hcclAvg takes floating types only. */
typedef enum {
	hcclSum = 0,
	hcclProd = 1,
	hcclMax = 2,
	hcclMin = 3,
	hcclAvg = 4,
	hcclNumOps = 5
} hcclRedOp_t;

/*
 * An opaque communicator. The library builds itself with
 * HCCL_COMM_AS_HANDLE, which sees the same 8 bytes as the integer handle
 * they are, so that no Go pointer check ever meets them.
 */
#ifdef HCCL_COMM_AS_HANDLE
typedef uintptr_t hcclComm_t;
#else
typedef struct hcclComm *hcclComm_t;
#endif

/*
 * A recorded graph of collectives on a communicator, and what
 * hcclGraphCompile made of it; opaque, handles as hcclComm_t is.
 */
#ifdef HCCL_COMM_AS_HANDLE
typedef uintptr_t hcclGraph_t;
typedef uintptr_t hcclGraphExec_t;
#else
typedef struct hcclGraph *hcclGraph_t;
typedef struct hcclGraphExec *hcclGraphExec_t;
#endif

#ifndef HCCL_NO_PROTOTYPES

/* HCCL_VERSION_CODE of the library. */
hcclResult_t hcclGetVersion(int *version);

/* A static description of a result code. */
const char *hcclGetErrorString(hcclResult_t result);

/*
 * The message of comm's last failed call, or with comm NULL of the last
 * failure of any call (hcclCommInitFromEnv's, for one). The string stays
 * valid until the next failure; "" when there was none.
 */
const char *hcclCommGetLastError(hcclComm_t comm);

/* Joins the job hcclrun started, from the environment it set. */
hcclResult_t hcclCommInitFromEnv(hcclComm_t *comm);
/* Releases comm's links and memory; comm is then invalid. */
hcclResult_t hcclCommDestroy(hcclComm_t comm);
/* Aborts the whole job: every rank's running and later calls fail with hcclAborted. */
hcclResult_t hcclCommAbort(hcclComm_t comm);
hcclResult_t hcclCommRank(hcclComm_t comm, int *rank);
hcclResult_t hcclCommCount(hcclComm_t comm, int *count);
/* The rank's number among the ranks on its host, and their count. */
hcclResult_t hcclCommLocalRank(hcclComm_t comm, int *rank);
hcclResult_t hcclCommLocalCount(hcclComm_t comm, int *count);

/* recvbuff[i] = op over the ranks of sendbuff[i]; in place when sendbuff == recvbuff. */
hcclResult_t hcclAllReduce(const void *sendbuff, void *recvbuff, size_t count, hcclDataType_t datatype,
                           hcclRedOp_t op, hcclComm_t comm);
/* Every rank's recvbuff = root's sendbuff (sendbuff is read on root only). */
hcclResult_t hcclBroadcast(const void *sendbuff, void *recvbuff, size_t count, hcclDataType_t datatype, int root,
                           hcclComm_t comm);
/* In-place broadcast of root's buff. */
hcclResult_t hcclBcast(void *buff, size_t count, hcclDataType_t datatype, int root, hcclComm_t comm);
/* root's recvbuff = op over the ranks of sendbuff; recvbuff may be NULL elsewhere. */
hcclResult_t hcclReduce(const void *sendbuff, void *recvbuff, size_t count, hcclDataType_t datatype, hcclRedOp_t op,
                        int root, hcclComm_t comm);
/* recvbuff holds nranks*sendcount elements, rank i's at i*sendcount. */
hcclResult_t hcclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, hcclDataType_t datatype,
                           hcclComm_t comm);
/* sendbuff holds nranks*recvcount elements; rank i gets block i of the reduction. */
hcclResult_t hcclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, hcclDataType_t datatype,
                               hcclRedOp_t op, hcclComm_t comm);
/* Block j (count elements) of sendbuff goes to rank j, as block i of its recvbuff. */
hcclResult_t hcclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, hcclDataType_t datatype,
                          hcclComm_t comm);
/*
 * sendbuff[sdispls[j] .. +sendcounts[j]] goes to rank j, which stores it at
 * recvbuff[rdispls[i] .. +recvcounts[i]]; nranks entries each, in elements.
 */
hcclResult_t hcclAlltoAllV(const void *sendbuff, const size_t *sendcounts, const size_t *sdispls, void *recvbuff,
                           const size_t *recvcounts, const size_t *rdispls, hcclDataType_t datatype,
                           hcclComm_t comm);
/* Point to point: the k-th send to a peer pairs with its k-th receive from us. */
hcclResult_t hcclSend(const void *sendbuff, size_t count, hcclDataType_t datatype, int peer, hcclComm_t comm);
hcclResult_t hcclRecv(void *recvbuff, size_t count, hcclDataType_t datatype, int peer, hcclComm_t comm);
hcclResult_t hcclBarrier(hcclComm_t comm);

/*
 * Memory the rank's peers on this host can map: large payloads sent from
 * it are copied once instead of read across processes. Zeroed; size 0
 * gives NULL.
 */
hcclResult_t hcclMemAlloc(void **ptr, size_t size);
hcclResult_t hcclMemFree(void *ptr);

/*
 * Graph mode: a training step that makes the same collectives every time
 * records them once, compiles them once on every rank, then launches the
 * result each step (runtime/doc.go, "Graph mode"):
 *
 *   hcclGraphCreate(comm, &graph);
 *   hcclGraphAllReduce(grad1, grad1, n1, hcclFloat, hcclSum, graph); ...
 *   hcclGraphCompile(graph, &exec);     // every rank, once
 *   for (...) { fill the buffers; hcclGraphLaunch(exec); }
 *   hcclGraphExecDestroy(exec); hcclGraphDestroy(graph);
 *
 * The hcclGraph* recording calls take the arguments of the collective of
 * the same name, with the graph in the communicator's place; they check
 * them as the collective does (a failure is returned there, and again by
 * hcclGraphCompile, whose every other rank then returns
 * hcclInvalidArgument naming this one) and send nothing. Compile checks
 * that every rank recorded the same graph (hcclMismatch on every rank, naming the first
 * differing node, otherwise), fuses small AllReduces into one and binds
 * each collective to its algorithm; a launch replays them in order,
 * holding the communicator from its first collective to its last, and
 * fails as the collectives do (hcclAborted when a peer dies).
 *
 * A graph holds the buffers, not their contents: each launch reads and
 * writes them as they are then. The buffers must therefore stay valid
 * until hcclGraphExecDestroy of every exec compiled from the graph and
 * hcclGraphDestroy of the graph. Broadcast is recorded in place only:
 * sendbuff must be recvbuff, on every rank. AlltoAllV's counts and
 * displacements are copied when it is recorded. A failure is kept as the
 * last error of the graph's communicator (hcclCommGetLastError(comm)),
 * except that of a NULL, destroyed or made-up handle, or of a destroyed
 * communicator, which is the library's (hcclCommGetLastError(NULL)). The
 * calls on one graph or exec are serialised; destroying the communicator
 * leaves its graphs and execs failing with hcclClosed until they are
 * destroyed.
 */
hcclResult_t hcclGraphCreate(hcclComm_t comm, hcclGraph_t *graph);
/*
 * Caps a fused AllReduce's staging buffer, in bytes: 0 (the default) takes
 * HCCL_GRAPH_FUSE_BYTES or 25 MiB, a negative value fuses nothing. Every
 * rank must compile with the same cap (hcclMismatch otherwise).
 */
hcclResult_t hcclGraphSetFuseBytes(hcclGraph_t graph, int64_t bytes);
hcclResult_t hcclGraphAllReduce(const void *sendbuff, void *recvbuff, size_t count, hcclDataType_t datatype,
                                hcclRedOp_t op, hcclGraph_t graph);
hcclResult_t hcclGraphBroadcast(const void *sendbuff, void *recvbuff, size_t count, hcclDataType_t datatype,
                                int root, hcclGraph_t graph);
hcclResult_t hcclGraphReduce(const void *sendbuff, void *recvbuff, size_t count, hcclDataType_t datatype,
                             hcclRedOp_t op, int root, hcclGraph_t graph);
hcclResult_t hcclGraphAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, hcclDataType_t datatype,
                                hcclGraph_t graph);
hcclResult_t hcclGraphReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                    hcclDataType_t datatype, hcclRedOp_t op, hcclGraph_t graph);
hcclResult_t hcclGraphAlltoAll(const void *sendbuff, void *recvbuff, size_t count, hcclDataType_t datatype,
                               hcclGraph_t graph);
hcclResult_t hcclGraphAlltoAllV(const void *sendbuff, const size_t *sendcounts, const size_t *sdispls,
                                void *recvbuff, const size_t *recvcounts, const size_t *rdispls,
                                hcclDataType_t datatype, hcclGraph_t graph);
hcclResult_t hcclGraphBarrier(hcclGraph_t graph);
/* Every rank, with the same graph; graph may be recorded on and compiled again. */
hcclResult_t hcclGraphCompile(hcclGraph_t graph, hcclGraphExec_t *exec);
/* Replays exec: every rank launches it, as it would make the calls. */
hcclResult_t hcclGraphLaunch(hcclGraphExec_t exec);
/* The number of collectives a launch makes, after fusion. */
hcclResult_t hcclGraphExecSteps(hcclGraphExec_t exec, int *steps);
hcclResult_t hcclGraphExecDestroy(hcclGraphExec_t exec);
/* Releases graph; execs compiled from it keep working. */
hcclResult_t hcclGraphDestroy(hcclGraph_t graph);

#endif /* HCCL_NO_PROTOTYPES */

#ifdef __cplusplus
}
#endif

#endif /* HCCL_H_ */
