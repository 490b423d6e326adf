/*
 * graph.c: graph mode from C. Every rank records one training step's
 * collectives on a graph once (small AllReduces that fuse, a large one,
 * a Broadcast, a Reduce, an AllGather, a ReduceScatter, one followed by
 * the AllGather of its result, an AlltoAll, a Barrier, over several
 * element types), compiles it, launches it three times with new data in
 * the buffers each time, and compares every element of every result with
 * what it must be, bit for bit. It then compiles the same graph again
 * without fusion and checks that too, and last launches an AlltoAllV
 * graph three times, checked likewise. It prints "rank R/N steps F unfused
 * U nodes M", the collectives a launch makes fused and unfused out of the
 * M recorded, then "rank R/N ok" (or "rank R: FAIL ..." and exits 1).
 *
 *   cc -O2 graph.c $(pkg-config --cflags --libs hccl) -o graph
 *   hcclrun -np 3 ./graph
 *
 * The data are small integers, exact in every type used.
 */
#include <hccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;
static hcclComm_t comm;

#define CHECK(call)                                                                                     \
	do {                                                                                            \
		hcclResult_t r_ = (call);                                                               \
		if (r_ != hcclSuccess) {                                                                \
			printf("rank %d: FAIL %s: %s: %s\n", rank, #call, hcclGetErrorString(r_),       \
			       hcclCommGetLastError(comm));                                             \
			exit(1);                                                                        \
		}                                                                                       \
	} while (0)

/* float16 bits of a non-negative integer v <= 2048 (exact). */
static uint16_t half_of(int64_t v) {
	if (v == 0) return 0;
	int e = 63 - __builtin_clzll((unsigned long long)v);
	return (uint16_t)(((e + 15) << 10) | (((v - (1LL << e)) << 10) >> e));
}

static int size_of(hcclDataType_t t) {
	switch (t) {
	case hcclInt8: case hcclUint8: return 1;
	case hcclInt16: case hcclUint16: case hcclFloat16: case hcclBfloat16: return 2;
	case hcclInt32: case hcclUint32: case hcclFloat32: return 4;
	default: return 8;
	}
}

/* Writes the exact value v as element i of buf. */
static void encode(hcclDataType_t t, void *buf, int64_t i, int64_t v) {
	switch (t) {
	case hcclInt8: ((int8_t *)buf)[i] = (int8_t)v; break;
	case hcclUint8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
	case hcclInt16: ((int16_t *)buf)[i] = (int16_t)v; break;
	case hcclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case hcclInt64: ((int64_t *)buf)[i] = v; break;
	case hcclFloat16: ((uint16_t *)buf)[i] = half_of(v); break;
	case hcclBfloat16: {
		float f = (float)v;
		uint32_t bits;
		memcpy(&bits, &f, 4);
		((uint16_t *)buf)[i] = (uint16_t)(bits >> 16); /* exact: v has at most 8 significant bits */
		break;
	}
	case hcclFloat32: ((float *)buf)[i] = (float)v; break;
	case hcclFloat64: ((double *)buf)[i] = (double)v; break;
	default: abort();
	}
}

/* ---- the step ---- */

enum coll { ALLREDUCE, BROADCAST, REDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, BARRIER };
static const char *const collnames[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AlltoAll",
                                        "Barrier"};

/* One recorded collective; send and recv hold sendn and recvn elements. */
struct node {
	enum coll coll;
	hcclDataType_t t;
	hcclRedOp_t op;
	size_t count; /* as the call takes it */
	int root;
	int inplace;
	int gathers_prev; /* an AllGather of the previous node's (a ReduceScatter's) result */
	void *send, *recv;
	size_t sendn, recvn;
};

#define MAXNODES 32
static struct node nodes[MAXNODES];
static int nnodes;

static void add(enum coll c, hcclDataType_t t, hcclRedOp_t op, size_t count, int root, int inplace) {
	struct node *n = &nodes[nnodes++];
	*n = (struct node){.coll = c, .t = t, .op = op, .count = count, .root = root, .inplace = inplace};
	size_t per = (size_t)nranks;
	switch (c) {
	case ALLREDUCE: case BROADCAST: case REDUCE: n->sendn = n->recvn = count; break;
	case ALLGATHER: n->sendn = count, n->recvn = count * per; break;
	case REDUCESCATTER: n->sendn = count * per, n->recvn = count; break;
	case ALLTOALL: n->sendn = n->recvn = count * per; break;
	case BARRIER: break;
	}
	int sz = size_of(t);
	n->send = calloc(n->sendn + 1, (size_t)sz);
	n->recv = inplace ? n->send : calloc(n->recvn + 1, (size_t)sz);
	if (c == REDUCE && rank != root) {
		free(n->recv);
		n->recv = NULL;
	}
}

/* Rank r's element i of node k's send buffer in launch it: 1 to 11. */
static int64_t value(int r, int k, int it, int64_t i) { return (5 * (int64_t)r + 3 * k + 7 * it + i) % 11 + 1; }

static int64_t reduced(hcclRedOp_t op, int k, int it, int64_t i) {
	int64_t acc = value(0, k, it, i);
	for (int r = 1; r < nranks; r++) {
		int64_t v = value(r, k, it, i);
		if (op == hcclMax) acc = v > acc ? v : acc;
		else if (op == hcclMin) acc = v < acc ? v : acc;
		else acc += v;
	}
	return acc;
}

static void record(hcclGraph_t g) {
	for (int k = 0; k < nnodes; k++) {
		struct node *n = &nodes[k];
		switch (n->coll) {
		case ALLREDUCE: CHECK(hcclGraphAllReduce(n->send, n->recv, n->count, n->t, n->op, g)); break;
		case BROADCAST: CHECK(hcclGraphBroadcast(n->send, n->recv, n->count, n->t, n->root, g)); break;
		case REDUCE: CHECK(hcclGraphReduce(n->send, n->recv, n->count, n->t, n->op, n->root, g)); break;
		case ALLGATHER: CHECK(hcclGraphAllGather(n->send, n->recv, n->count, n->t, g)); break;
		case REDUCESCATTER: CHECK(hcclGraphReduceScatter(n->send, n->recv, n->count, n->t, n->op, g)); break;
		case ALLTOALL: CHECK(hcclGraphAlltoAll(n->send, n->recv, n->count, n->t, g)); break;
		case BARRIER: CHECK(hcclGraphBarrier(g)); break;
		}
	}
}

/* Fills every send buffer for launch it, and every separate recv buffer with garbage. */
static void fill(int it) {
	for (int k = 0; k < nnodes; k++) {
		struct node *n = &nodes[k];
		if (!n->gathers_prev) /* whose input is the ReduceScatter's output */
			for (size_t i = 0; i < n->sendn; i++) encode(n->t, n->send, (int64_t)i, value(rank, k, it, (int64_t)i));
		if (n->recv && n->recv != n->send) memset(n->recv, 0x5a, n->recvn * (size_t)size_of(n->t));
	}
}

static void expect(const struct node *n, int k, int it, const void *buf, size_t i, int64_t want) {
	unsigned char w[8];
	int sz = size_of(n->t);
	encode(n->t, w, 0, want);
	if (memcmp((const char *)buf + i * (size_t)sz, w, (size_t)sz) != 0) {
		printf("rank %d: FAIL launch %d node %d (%s count %zu): element %zu differs from %lld\n", rank, it, k,
		       collnames[n->coll], n->count, i, (long long)want);
		exit(1);
	}
}

static void check(int it) {
	for (int k = 0; k < nnodes; k++) {
		struct node *n = &nodes[k];
		size_t c = n->count;
		for (size_t i = 0; i < n->recvn && n->recv; i++) {
			int64_t want = 0;
			switch (n->coll) {
			case ALLREDUCE: case REDUCE: want = reduced(n->op, k, it, (int64_t)i); break;
			case BROADCAST: want = value(n->root, k, it, (int64_t)i); break;
			case ALLGATHER:
				want = n->gathers_prev ? reduced(nodes[k - 1].op, k - 1, it, (int64_t)i)
				                       : value((int)(i / c), k, it, (int64_t)(i % c));
				break;
			case REDUCESCATTER: want = reduced(n->op, k, it, (int64_t)(rank * c + i)); break;
			case ALLTOALL: want = value((int)(i / c), k, it, (int64_t)(rank * c + i % c)); break;
			case BARRIER: break;
			}
			expect(n, k, it, n->recv, i, want);
		}
	}
}

static int launch_and_check(hcclGraphExec_t exe) {
	for (int it = 0; it < 3; it++) {
		fill(it);
		CHECK(hcclGraphLaunch(exe));
		check(it);
	}
	int steps;
	CHECK(hcclGraphExecSteps(exe, &steps));
	return steps;
}

/* AlltoAllV on a graph of its own: rank i sends (i + 2j) % 3 * 5 int32s to
 * rank j (some blocks empty), launched three times with new data; the
 * counts are the graph's from the recording on, so they are scribbled over
 * after it. Element e of the block from s holds value(s, j, it, e). */
static void alltoallv_graph(void) {
	size_t *v = calloc(4 * (size_t)nranks, sizeof *v), *sc = v, *sd = v + nranks, *rc = v + 2 * nranks,
	       *rd = v + 3 * (size_t)nranks, so = 0, ro = 0;
	for (int j = 0; j < nranks; j++) {
		sc[j] = (size_t)((rank + 2 * j) % 3 * 5), sd[j] = so, so += sc[j];
		rc[j] = (size_t)((j + 2 * rank) % 3 * 5), rd[j] = ro, ro += rc[j];
	}
	int32_t *send = calloc(so + 1, sizeof *send), *recv = calloc(ro + 1, sizeof *recv);
	hcclGraph_t g;
	hcclGraphExec_t exe;
	CHECK(hcclGraphCreate(comm, &g));
	CHECK(hcclGraphAlltoAllV(send, sc, sd, recv, rc, rd, hcclInt32, g));
	size_t sent = so;
	memset(v, 0xff, 4 * (size_t)nranks * sizeof *v);
	CHECK(hcclGraphCompile(g, &exe));
	for (int it = 0; it < 3; it++) {
		size_t off = 0;
		for (int j = 0; j < nranks; j++)
			for (size_t e = 0; e < (size_t)((rank + 2 * j) % 3 * 5); e++) send[off++] = (int32_t)value(rank, j, it, (int64_t)e);
		if (off != sent) {
			printf("rank %d: FAIL alltoallv: %zu elements filled, %zu sent\n", rank, off, sent);
			exit(1);
		}
		memset(recv, 0, (ro + 1) * sizeof *recv);
		CHECK(hcclGraphLaunch(exe));
		off = 0;
		for (int s = 0; s < nranks; s++)
			for (size_t e = 0; e < (size_t)((s + 2 * rank) % 3 * 5); e++, off++)
				if (recv[off] != (int32_t)value(s, rank, it, (int64_t)e)) {
					printf("rank %d: FAIL alltoallv launch %d: element %zu from rank %d is %d, want %d\n", rank,
					       it, e, s, recv[off], (int)value(s, rank, it, (int64_t)e));
					exit(1);
				}
		if (recv[ro] != 0) {
			printf("rank %d: FAIL alltoallv launch %d: wrote past its receive ranges\n", rank, it);
			exit(1);
		}
	}
	CHECK(hcclGraphExecDestroy(exe));
	CHECK(hcclGraphDestroy(g));
	free(send), free(recv), free(v);
}

int main(void) {
	CHECK(hcclCommInitFromEnv(&comm));
	CHECK(hcclCommRank(comm, &rank));
	CHECK(hcclCommCount(comm, &nranks));

	/* DDP's buckets: adjacent small AllReduces of one type and op fuse. */
	for (int i = 0; i < 6; i++) add(ALLREDUCE, hcclFloat32, hcclSum, 1000 + (size_t)i, 0, i % 2);
	add(ALLREDUCE, hcclInt32, hcclMax, 333, 0, 1);
	add(ALLREDUCE, hcclInt32, hcclMax, 334, 0, 0);
	add(ALLREDUCE, hcclFloat32, hcclSum, 300000, 0, 1); /* too large to fuse */
	add(BROADCAST, hcclInt64, hcclSum, 777, nranks - 1, 1);
	add(REDUCE, hcclFloat64, hcclSum, 500, 0, 0);
	add(ALLGATHER, hcclUint8, hcclSum, 513, 0, 0);
	add(REDUCESCATTER, hcclInt16, hcclSum, 100, 0, 0);
	add(BARRIER, hcclInt8, hcclSum, 0, 0, 0);
	add(ALLTOALL, hcclInt8, hcclSum, 50, 0, 0);
	/* A ReduceScatter and the AllGather of its result: an AllReduce, when cheaper. */
	add(REDUCESCATTER, hcclFloat32, hcclSum, 256, 0, 0);
	add(ALLGATHER, hcclFloat32, hcclSum, 256, 0, 0);
	free(nodes[nnodes - 1].send);
	nodes[nnodes - 1].send = nodes[nnodes - 2].recv;
	nodes[nnodes - 1].gathers_prev = 1;
	add(ALLREDUCE, hcclBfloat16, hcclSum, 64, 0, 1);
	add(ALLREDUCE, hcclFloat16, hcclMin, 65, 0, 0);

	hcclGraph_t g;
	hcclGraphExec_t exe, unfused;
	CHECK(hcclGraphCreate(comm, &g));
	record(g);
	CHECK(hcclGraphCompile(g, &exe));
	int steps = launch_and_check(exe);
	CHECK(hcclGraphSetFuseBytes(g, -1)); /* the same graph compiled again, fusing nothing */
	CHECK(hcclGraphCompile(g, &unfused));
	int unfused_steps = launch_and_check(unfused);
	CHECK(hcclGraphExecDestroy(exe));
	CHECK(hcclGraphExecDestroy(unfused));
	CHECK(hcclGraphDestroy(g));
	alltoallv_graph();
	CHECK(hcclCommDestroy(comm));
	printf("rank %d/%d steps %d unfused %d nodes %d\n", rank, nranks, steps, unfused_steps, nnodes);
	printf("rank %d/%d ok\n", rank, nranks);
	return 0;
}
