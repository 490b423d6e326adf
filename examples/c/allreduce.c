/*
 * allreduce.c: hcclrun's runtime from C. Every rank joins the job, runs
 * every collective of hccl.h over every element type and reduction, with
 * counts 0, 1, odd and large, out of place and in place, compares every
 * element of every result with what it must be, bit for bit, and prints
 * "rank R/N ok" (or "rank R: FAIL ..." and exits 1).
 *
 *   cc -O2 allreduce.c $(pkg-config --cflags --libs hccl) -o allreduce
 *   hcclrun -np 4 ./allreduce
 *
 * The data are small integers, whose sums, products, extremes and averages
 * are exact in every type, from int8 to bfloat16: the check compares the
 * bytes of each element with the encoding of the exact value.
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

/* ---- element types ---- */

struct dtype {
	hcclDataType_t t;
	const char *name;
	int size;
	int64_t exact; /* every integer in [0, exact] is exact and sums up to it do not overflow */
	int floating;
};

static const struct dtype dtypes[] = {
	{hcclInt8, "int8", 1, 127, 0},           {hcclUint8, "uint8", 1, 255, 0},
	{hcclInt16, "int16", 2, 32767, 0},       {hcclUint16, "uint16", 2, 65535, 0},
	{hcclInt32, "int32", 4, 2147483647, 0},  {hcclUint32, "uint32", 4, 4294967295LL, 0},
	{hcclInt64, "int64", 8, INT64_MAX, 0},   {hcclUint64, "uint64", 8, INT64_MAX, 0},
	{hcclFloat16, "float16", 2, 2048, 1},    {hcclBfloat16, "bfloat16", 2, 256, 1},
	{hcclFloat32, "float32", 4, 1 << 24, 1}, {hcclFloat64, "float64", 8, 1LL << 53, 1},
};
#define NDTYPES (int)(sizeof dtypes / sizeof dtypes[0])

/* float16 bits of a non-negative integer v <= 2048 (exact). */
static uint16_t half_of(int64_t v) {
	if (v == 0) return 0;
	int e = 63 - __builtin_clzll((unsigned long long)v);
	return (uint16_t)(((e + 15) << 10) | (((v - (1LL << e)) << 10) >> e));
}

/* Writes the exact value v as element i of buf. */
static void encode(const struct dtype *d, void *buf, int64_t i, int64_t v) {
	switch (d->t) {
	case hcclInt8: ((int8_t *)buf)[i] = (int8_t)v; break;
	case hcclUint8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
	case hcclInt16: ((int16_t *)buf)[i] = (int16_t)v; break;
	case hcclUint16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
	case hcclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case hcclUint32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
	case hcclInt64: ((int64_t *)buf)[i] = v; break;
	case hcclUint64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
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

/* ---- the values every rank contributes, and their reductions ---- */

static const char *const opnames[] = {"sum", "prod", "max", "min", "avg"};
static int64_t pat_m; /* values run from 1 to pat_m */

/* Rank r's element i for op (a data-moving collective uses hcclSum's). */
static int64_t value(hcclRedOp_t op, int r, int64_t i) {
	if (op == hcclProd) return (r + i) % nranks == 0 ? 2 : 1; /* one 2 per element: the product is 2 */
	int64_t v = (7 * (int64_t)r + 3 * i) % pat_m + 1;
	return op == hcclAvg ? v * nranks : v; /* the average is then the sum of the v */
}

static int64_t reduced(hcclRedOp_t op, int64_t i) {
	if (op == hcclProd) return 2;
	int64_t acc = value(op, 0, i);
	for (int r = 1; r < nranks; r++) {
		int64_t v = value(op, r, i);
		if (op == hcclMax) acc = v > acc ? v : acc;
		else if (op == hcclMin) acc = v < acc ? v : acc;
		else acc += v;
	}
	return op == hcclAvg ? acc / nranks : acc;
}

/* pat_m for d: the sums (of averages' scaled values too) stay exact. */
static void set_pattern(const struct dtype *d) {
	int64_t cap = d->exact / ((int64_t)nranks * nranks);
	pat_m = cap < 1 ? 1 : cap > 100 ? 100 : cap;
}

static void fill(const struct dtype *d, void *buf, int64_t n, hcclRedOp_t op, int r, int64_t from) {
	for (int64_t i = 0; i < n; i++) encode(d, buf, i, value(op, r, from + i));
}

static void zero(const struct dtype *d, void *buf, int64_t n) { memset(buf, 0x5a, (size_t)(n * d->size)); }

static const char *what;

/* Compares element i of buf with the exact value want. */
static void expect(const struct dtype *d, const void *buf, int64_t i, int64_t want) {
	unsigned char w[8];
	encode(d, w, 0, want);
	if (memcmp((const char *)buf + i * d->size, w, (size_t)d->size) != 0) {
		printf("rank %d: FAIL %s %s: element %lld differs from %lld\n", rank, what, d->name, (long long)i,
		       (long long)want);
		exit(1);
	}
}

/* ---- the collectives ---- */

static char *sbuf, *rbuf;

static void check_allreduce(const struct dtype *d, int64_t n) {
	for (int op = 0; op <= hcclAvg; op++) {
		if (op == hcclAvg && !d->floating) continue;
		what = opnames[op];
		fill(d, sbuf, n, op, rank, 0), zero(d, rbuf, n);
		CHECK(hcclAllReduce(sbuf, rbuf, (size_t)n, d->t, op, comm));
		for (int64_t i = 0; i < n; i++) expect(d, rbuf, i, reduced(op, i));
		fill(d, rbuf, n, op, rank, 0); /* in place */
		CHECK(hcclAllReduce(rbuf, rbuf, (size_t)n, d->t, op, comm));
		for (int64_t i = 0; i < n; i++) expect(d, rbuf, i, reduced(op, i));
	}
}

static void check_reduce(const struct dtype *d, int64_t n) {
	what = "reduce";
	for (int root = 0; root < nranks; root++) {
		hcclRedOp_t op = root % 2 ? hcclMax : hcclSum;
		fill(d, sbuf, n, op, rank, 0), zero(d, rbuf, n);
		CHECK(hcclReduce(sbuf, rank == root ? rbuf : NULL, (size_t)n, d->t, op, root, comm));
		if (rank == root)
			for (int64_t i = 0; i < n; i++) expect(d, rbuf, i, reduced(op, i));
	}
}

static void check_broadcast(const struct dtype *d, int64_t n) {
	what = "broadcast";
	int roots[2] = {0, nranks - 1};
	for (int k = 0; k < 2; k++) {
		int root = roots[k];
		fill(d, sbuf, n, hcclSum, root, 0), zero(d, rbuf, n);
		CHECK(hcclBroadcast(sbuf, rbuf, (size_t)n, d->t, root, comm));
		for (int64_t i = 0; i < n; i++) expect(d, rbuf, i, value(hcclSum, root, i));
		if (rank == root) fill(d, rbuf, n, hcclSum, root, 1);
		else zero(d, rbuf, n);
		CHECK(hcclBcast(rbuf, (size_t)n, d->t, root, comm));
		for (int64_t i = 0; i < n; i++) expect(d, rbuf, i, value(hcclSum, root, 1 + i));
	}
}

static void check_allgather(const struct dtype *d, int64_t n) {
	what = "allgather";
	fill(d, sbuf, n, hcclSum, rank, 0), zero(d, rbuf, n * nranks);
	CHECK(hcclAllGather(sbuf, rbuf, (size_t)n, d->t, comm));
	for (int r = 0; r < nranks; r++)
		for (int64_t i = 0; i < n; i++) expect(d, rbuf, r * n + i, value(hcclSum, r, i));
	zero(d, rbuf, n * nranks); /* in place: this rank's block is already where it goes */
	fill(d, rbuf + rank * n * d->size, n, hcclSum, rank, 0);
	CHECK(hcclAllGather(rbuf + rank * n * d->size, rbuf, (size_t)n, d->t, comm));
	for (int r = 0; r < nranks; r++)
		for (int64_t i = 0; i < n; i++) expect(d, rbuf, r * n + i, value(hcclSum, r, i));
}

static void check_reducescatter(const struct dtype *d, int64_t n) {
	hcclRedOp_t ops[2] = {hcclSum, hcclMin};
	for (int k = 0; k < 2; k++) {
		hcclRedOp_t op = ops[k];
		what = k ? "reducescatter min" : "reducescatter sum";
		fill(d, sbuf, n * nranks, op, rank, 0), zero(d, rbuf, n);
		CHECK(hcclReduceScatter(sbuf, rbuf, (size_t)n, d->t, op, comm));
		for (int64_t i = 0; i < n; i++) expect(d, rbuf, i, reduced(op, rank * n + i));
		fill(d, rbuf, n * nranks, op, rank, 0); /* in place: the result lands in this rank's block */
		CHECK(hcclReduceScatter(rbuf, rbuf + rank * n * d->size, (size_t)n, d->t, op, comm));
		for (int64_t i = 0; i < n; i++) expect(d, rbuf, rank * n + i, reduced(op, rank * n + i));
	}
}

static void check_alltoall(const struct dtype *d, int64_t n) {
	what = "alltoall";
	fill(d, sbuf, n * nranks, hcclSum, rank, 0), zero(d, rbuf, n * nranks);
	CHECK(hcclAlltoAll(sbuf, rbuf, (size_t)n, d->t, comm));
	for (int s = 0; s < nranks; s++)
		for (int64_t i = 0; i < n; i++) expect(d, rbuf, s * n + i, value(hcclSum, s, rank * n + i));
}

/* AlltoAllV blocks: rank i sends c(i, j) elements to rank j, uneven and some empty. */
static int64_t vcount(int i, int j, int64_t n) { return n * ((i + 2 * j) % 3) / 2; }

static void check_alltoallv(const struct dtype *d, int64_t n) {
	what = "alltoallv";
	size_t *sc = calloc(4 * (size_t)nranks, sizeof *sc), *sd = sc + nranks, *rc = sd + nranks, *rd = rc + nranks;
	size_t so = 0, ro = 0;
	for (int j = 0; j < nranks; j++) {
		sc[j] = (size_t)vcount(rank, j, n), sd[j] = so, so += sc[j];
		rc[j] = (size_t)vcount(j, rank, n), rd[j] = ro, ro += rc[j];
	}
	fill(d, sbuf, (int64_t)so, hcclSum, rank, 0), zero(d, rbuf, (int64_t)ro);
	CHECK(hcclAlltoAllV(sbuf, sc, sd, rbuf, rc, rd, d->t, comm));
	for (int s = 0; s < nranks; s++) {
		int64_t from = 0; /* where sender s's block for this rank starts in its send buffer */
		for (int j = 0; j < rank; j++) from += vcount(s, j, n);
		for (int64_t i = 0; i < (int64_t)rc[s]; i++) expect(d, rbuf, (int64_t)rd[s] + i, value(hcclSum, s, from + i));
	}
	free(sc);
}

/* A ring of Send and Recv: rank 0 starts it, every other rank passes it on. */
static void check_sendrecv(const struct dtype *d, int64_t n) {
	if (nranks == 1) return;
	what = "send/recv";
	int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
	fill(d, sbuf, n, hcclSum, rank, 0), zero(d, rbuf, n);
	if (rank == 0) {
		CHECK(hcclSend(sbuf, (size_t)n, d->t, next, comm));
		CHECK(hcclRecv(rbuf, (size_t)n, d->t, prev, comm));
	} else {
		CHECK(hcclRecv(rbuf, (size_t)n, d->t, prev, comm));
		CHECK(hcclSend(sbuf, (size_t)n, d->t, next, comm));
	}
	for (int64_t i = 0; i < n; i++) expect(d, rbuf, i, value(hcclSum, prev, i));
}

int main(void) {
	CHECK(hcclCommInitFromEnv(&comm));
	CHECK(hcclCommRank(comm, &rank));
	CHECK(hcclCommCount(comm, &nranks));

	static const int64_t counts[] = {0, 1, 7, 1001, 65537};
	const int64_t maxcount = 65537;
	/* Buffers from hcclMemAlloc, which peers on the host can map; the largest
	 * element is 8 bytes and the largest buffer holds nranks blocks. */
	size_t bytes = (size_t)(maxcount * 8 * nranks);
	CHECK(hcclMemAlloc((void **)&sbuf, bytes));
	CHECK(hcclMemAlloc((void **)&rbuf, bytes));

	for (int k = 0; k < NDTYPES; k++) {
		const struct dtype *d = &dtypes[k];
		set_pattern(d);
		for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
			int64_t n = counts[c];
			if (n > 1001 && d->t != hcclFloat32 && d->t != hcclInt8) continue; /* large counts: two types suffice */
			check_allreduce(d, n);
			check_reduce(d, n);
			check_broadcast(d, n);
			check_allgather(d, n);
			check_reducescatter(d, n);
			check_alltoall(d, n);
			check_alltoallv(d, n);
			check_sendrecv(d, n);
		}
	}
	CHECK(hcclBarrier(comm));
	CHECK(hcclMemFree(sbuf));
	CHECK(hcclMemFree(rbuf));
	printf("rank %d/%d ok\n", rank, nranks);
	CHECK(hcclCommDestroy(comm));
	return 0;
}
