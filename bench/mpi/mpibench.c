/*
 * mpibench: the MPI side of `hcclrun bench`, for bench/compare.
 *
 *   mpirun -n 2 ./mpibench -o allreduce -b 8 -e 64M -f 2 [-n 20] [-w 5] [-c 1]
 *          [-d float] [--redop sum] [-r 0] [-R 0]
 *   mpirun -n 2 ./mpibench --step 64x16K,4x4M [--rounds 5] [-n 20] [-w 5] [-c 1] [-d float] [--redop sum] [-R 0]
 *
 * Compiled with -I bench/mpi/onhccl against libhccl.so instead of an MPI, it
 * is the same benchmark of the runtime through its C interface (onhccl/mpi.h
 * maps these MPI calls onto hccl.h), run under hcclrun.
 *
 * It is written to mean exactly what hcclrun bench means (see bench/doc.go),
 * so that the two tables can be divided column by column:
 *
 *  - the same sizes (-b to -e, times -f or plus -i; a zero minimum is run
 *    once, then the sweep goes on from 1 byte);
 *  - the same layouts: count = size / element size, rounded down to a
 *    multiple of the rank count where the collective splits the buffer;
 *    the size column is max(send, recv) bytes; AlltoAllV blocks are
 *    c(i,j) = k/2 + k*((i+j) mod n)/(n-1) elements for a mean block k;
 *  - the ranks' pids gathered after the sweep, so that nothing but
 *    MPI_Init and MPI_Barrier precedes the first timed call (-w 0: the
 *    calls hcclrun bench --first times);
 *  - per size, out of place then in place (MPI_IN_PLACE; AlltoAll and
 *    AlltoAllV have no in-place column, as in hcclrun): fill the buffers,
 *    -w untimed calls, MPI_Barrier, -n timed calls back to back, then the
 *    mean and the median iteration, each the maximum over ranks
 *    (MPI_Allreduce MAX);
 *  - algbw = size / time, busbw = algbw times nccl-tests' factor;
 *  - with -c 1, a refill, one more call, and an exact comparison of every
 *    result element with the same integer patterns (#wrong summed over
 *    ranks with MPI_Allreduce);
 *  - with -R 1 the buffers come from MPI_Alloc_mem (hcclMemAlloc on
 *    libhccl.so, as hcclrun bench -R 1 takes runtime.MemAlloc), with -R 0
 *    (the default) from malloc.
 *
 * --step is the MPI twin of hcclrun bench --graph's "calls" row (bench/step.go):
 * the step's AllReduces (COUNTxBYTES,... in order; issue 36's 64x16K,4x4M)
 * made one by one, MPI_IN_PLACE, each on a buffer of its own, in --rounds
 * rounds of -w untimed steps, MPI_Barrier and -n timed steps; the row gives
 * the median over rounds of the mean and of the median step (each the
 * maximum over ranks), in the --graph table's 11 fields; -c 1 fills buffer k
 * with the pattern's elements from the calls before it on, makes one step
 * and compares every element.
 *
 * MPI_Reduce_scatter_block in place leaves a rank's block at the start of
 * the buffer (hcclrun leaves it at the rank's own offset); the check follows
 * each library's definition. Out-of-place broadcast is MPI_Bcast on the
 * receive buffer that the root has filled (MPI_Bcast has one buffer).
 */
#include <mpi.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum coll { ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, ALLTOALLV, BROADCAST, REDUCE, NCOLLS };
static const char *coll_names[NCOLLS] = {"allreduce", "allgather", "reducescatter", "alltoall",
                                         "alltoallv", "broadcast", "reduce"};

struct dtype {
	const char *name;
	MPI_Datatype mpi;
	int size;
	int64_t exact; /* every integer in [0, exact] is exact and no sum up to it overflows */
};
static struct dtype dtypes[] = {
	{"float", MPI_FLOAT, 4, 1LL << 24},     {"double", MPI_DOUBLE, 8, 1LL << 53},
	{"int8", MPI_INT8_T, 1, 127},           {"uint8", MPI_UINT8_T, 1, 255},
	{"int32", MPI_INT32_T, 4, 2147483647LL}, {"int64", MPI_INT64_T, 8, INT64_MAX},
};

struct redop {
	const char *name;
	MPI_Op op;
};

static int rank, nranks;
static struct dtype *dt;
static const char *opname = "sum";
static MPI_Op mpiop;
static int iters = 20, warmup = 5, check = 1, root = 0, alloc_mem = 0;

static void die(const char *msg) {
	if (rank == 0) fprintf(stderr, "mpibench: %s\n", msg);
	MPI_Abort(MPI_COMM_WORLD, 2);
	exit(2);
}

/* ---- sizes ---- */

static int64_t parse_size(const char *s) {
	char *end;
	long long v = strtoll(s, &end, 10);
	if (end == s || v < 0) die("bad size");
	switch (*end) {
	case 'K': case 'k': v <<= 10; break;
	case 'M': case 'm': v <<= 20; break;
	case 'G': case 'g': v <<= 30; break;
	case 0: break;
	default: die("bad size suffix");
	}
	return v;
}

/* ---- layouts (bench/layout.go) ---- */

struct layout {
	int64_t bytes; /* the size column */
	int64_t count; /* the count column */
	int64_t sendcount, recvcount;
};

static int64_t vcount(int i, int j, int64_t k) {
	if (nranks == 1) return k;
	return k / 2 + k * ((i + j) % nranks) / (nranks - 1);
}

static int64_t vtotal(int64_t k) {
	int64_t t = 0;
	for (int j = 0; j < nranks; j++) t += vcount(0, j, k);
	return t;
}

static struct layout layout_of(int c, int64_t size) {
	struct layout l;
	int64_t count = size / dt->size, k = count / nranks;
	switch (c) {
	case ALLGATHER: l.count = k; l.sendcount = k; l.recvcount = k * nranks; break;
	case REDUCESCATTER: l.count = k; l.sendcount = k * nranks; l.recvcount = k; break;
	case ALLTOALL: l.count = k; l.sendcount = l.recvcount = k * nranks; break;
	case ALLTOALLV: l.count = k; l.sendcount = l.recvcount = vtotal(k); break;
	default: l.count = l.sendcount = l.recvcount = count;
	}
	l.bytes = (l.sendcount > l.recvcount ? l.sendcount : l.recvcount) * dt->size;
	return l;
}

static double bus_factor(int c) {
	switch (c) {
	case ALLREDUCE: return 2.0 * (nranks - 1) / nranks;
	case ALLGATHER: case REDUCESCATTER: case ALLTOALL: case ALLTOALLV: return (double)(nranks - 1) / nranks;
	default: return 1.0;
	}
}

/* ---- patterns (bench/pattern.go) ---- */

static int64_t pat_m, pat_ma;
static const char *pat_op; /* the reduction, or "sum" for data movement */

static int64_t value(int r, int64_t i) {
	if (strcmp(pat_op, "prod") == 0) return (r + i) % nranks == 0 ? 2 : 1;
	return (7 * (int64_t)r + i) % pat_m + 1;
}

static int64_t reduced(int64_t i) {
	if (strcmp(pat_op, "prod") == 0) return 2;
	int64_t acc = value(0, i);
	for (int r = 1; r < nranks; r++) {
		int64_t v = value(r, i);
		if (strcmp(pat_op, "max") == 0) acc = v > acc ? v : acc;
		else if (strcmp(pat_op, "min") == 0) acc = v < acc ? v : acc;
		else acc += v;
	}
	return acc;
}

static void set(void *buf, int64_t i, int64_t v) {
	switch (dt->mpi == MPI_FLOAT ? 0 : dt->mpi == MPI_DOUBLE ? 1 : dt->size == 1 ? 2 : dt->size == 4 ? 3 : 4) {
	case 0: ((float *)buf)[i] = (float)v; break;
	case 1: ((double *)buf)[i] = (double)v; break;
	case 2: ((int8_t *)buf)[i] = (int8_t)v; break;
	case 3: ((int32_t *)buf)[i] = (int32_t)v; break;
	default: ((int64_t *)buf)[i] = v;
	}
}

static int64_t get(const void *buf, int64_t i) {
	if (dt->mpi == MPI_FLOAT) return (int64_t)((const float *)buf)[i];
	if (dt->mpi == MPI_DOUBLE) return (int64_t)((const double *)buf)[i];
	if (dt->mpi == MPI_UINT8_T) return ((const uint8_t *)buf)[i];
	if (dt->size == 1) return ((const int8_t *)buf)[i];
	if (dt->size == 4) return ((const int32_t *)buf)[i];
	return ((const int64_t *)buf)[i];
}

/* exact compares buf[i] with v without the float-to-integer truncation of get. */
static int exact(const void *buf, int64_t i, int64_t v) {
	if (dt->mpi == MPI_FLOAT) return ((const float *)buf)[i] == (float)v;
	if (dt->mpi == MPI_DOUBLE) return ((const double *)buf)[i] == (double)v;
	return get(buf, i) == v;
}


/* ---- one case ---- */

struct bcase {
	int coll, inplace;
	struct layout l;
	void *sbuf, *rbuf; /* the big buffers */
	int *sc, *sd, *rc, *rd; /* AlltoAllV */
};

static void fill(struct bcase *b) {
	int64_t k = b->l.count;
	int64_t n = nranks;
	switch (b->coll) {
	case ALLREDUCE: case REDUCE:
		for (int64_t i = 0; i < k; i++) {
			set(b->rbuf, i, 0);
			set(b->inplace ? b->rbuf : b->sbuf, i, value(rank, i));
		}
		break;
	case ALLGATHER:
		for (int64_t i = 0; i < n * k; i++) set(b->rbuf, i, 0);
		for (int64_t i = 0; i < k; i++)
			set(b->inplace ? b->rbuf : b->sbuf, (b->inplace ? rank * k : 0) + i, value(rank, i));
		break;
	case REDUCESCATTER:
		for (int64_t i = 0; i < k; i++) set(b->rbuf, i, 0);
		for (int64_t i = 0; i < n * k; i++) set(b->inplace ? b->rbuf : b->sbuf, i, value(rank, i));
		break;
	case ALLTOALL: case ALLTOALLV:
		for (int64_t i = 0; i < b->l.recvcount; i++) set(b->rbuf, i, 0);
		for (int64_t i = 0; i < b->l.sendcount; i++) set(b->sbuf, i, value(rank, i));
		break;
	case BROADCAST: {
		void *buf = b->inplace ? b->sbuf : b->rbuf;
		for (int64_t i = 0; i < k; i++) set(buf, i, rank == root ? value(root, i) : 0);
		break;
	}
	}
}

static void run(struct bcase *b) {
	int k = (int)b->l.count;
	MPI_Datatype t = dt->mpi;
	const void *in = b->inplace ? MPI_IN_PLACE : b->sbuf;
	switch (b->coll) {
	case ALLREDUCE: MPI_Allreduce(in, b->rbuf, k, t, mpiop, MPI_COMM_WORLD); break;
	case ALLGATHER:
		MPI_Allgather(in, k, t, b->rbuf, k, t, MPI_COMM_WORLD);
		break;
	case REDUCESCATTER: MPI_Reduce_scatter_block(in, b->rbuf, k, t, mpiop, MPI_COMM_WORLD); break;
	case ALLTOALL: MPI_Alltoall(b->sbuf, k, t, b->rbuf, k, t, MPI_COMM_WORLD); break;
	case ALLTOALLV: MPI_Alltoallv(b->sbuf, b->sc, b->sd, t, b->rbuf, b->rc, b->rd, t, MPI_COMM_WORLD); break;
	case BROADCAST: MPI_Bcast(b->inplace ? b->sbuf : b->rbuf, k, t, root, MPI_COMM_WORLD); break;
	case REDUCE:
		if (b->inplace && rank == root)
			MPI_Reduce(MPI_IN_PLACE, b->rbuf, k, t, mpiop, root, MPI_COMM_WORLD);
		else /* recvbuf is not significant off the root; MPICH faults on an aliased one */
			MPI_Reduce(b->inplace ? b->rbuf : b->sbuf, rank == root ? b->rbuf : NULL, k, t, mpiop, root,
			           MPI_COMM_WORLD);
		break;
	}
}

static int64_t count_wrong(struct bcase *b) {
	int64_t k = b->l.count, wrong = 0;
	switch (b->coll) {
	case ALLREDUCE:
		for (int64_t i = 0; i < k; i++) wrong += !exact(b->rbuf, i, reduced(i));
		break;
	case REDUCE:
		if (rank == root)
			for (int64_t i = 0; i < k; i++) wrong += !exact(b->rbuf, i, reduced(i));
		break;
	case ALLGATHER:
		for (int s = 0; s < nranks; s++)
			for (int64_t i = 0; i < k; i++) wrong += !exact(b->rbuf, s * k + i, value(s, i));
		break;
	case REDUCESCATTER:
		/* MPI_IN_PLACE: the block is at the start of the buffer. */
		for (int64_t i = 0; i < k; i++) wrong += !exact(b->rbuf, i, reduced(rank * k + i));
		break;
	case ALLTOALL:
		for (int s = 0; s < nranks; s++)
			for (int64_t i = 0; i < k; i++) wrong += !exact(b->rbuf, s * k + i, value(s, rank * k + i));
		break;
	case ALLTOALLV:
		for (int s = 0; s < nranks; s++) {
			int64_t sdisp = 0; /* sender s's displacement of the block for this rank */
			for (int j = 0; j < rank; j++) sdisp += vcount(s, j, k);
			for (int64_t i = 0; i < b->rc[s]; i++) wrong += !exact(b->rbuf, b->rd[s] + i, value(s, sdisp + i));
		}
		break;
	case BROADCAST: {
		void *buf = b->inplace ? b->sbuf : b->rbuf;
		for (int64_t i = 0; i < k; i++) wrong += !exact(buf, i, value(root, i));
		break;
	}
	}
	return wrong;
}

static int cmp_double(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct result {
	double time_us, median_us, algbw, busbw;
	long long wrong;
};

static struct result measure(struct bcase *b, double *stamps) {
	struct result res;
	fill(b);
	for (int i = 0; i < warmup; i++) run(b);
	MPI_Barrier(MPI_COMM_WORLD);
	double start = MPI_Wtime(), prev = start;
	for (int i = 0; i < iters; i++) {
		run(b);
		double now = MPI_Wtime();
		stamps[i] = now - prev;
		prev = now;
	}
	double t[2];
	t[0] = (prev - start) / iters;
	qsort(stamps, iters, sizeof *stamps, cmp_double);
	t[1] = iters % 2 ? stamps[iters / 2] : (stamps[iters / 2 - 1] + stamps[iters / 2]) / 2;
	MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	res.time_us = t[0] * 1e6;
	res.median_us = t[1] * 1e6;
	res.algbw = t[0] > 0 ? (double)b->l.bytes / t[0] / 1e9 : 0;
	res.busbw = res.algbw * bus_factor(b->coll);
	res.wrong = -1;
	if (check) {
		fill(b);
		run(b);
		int64_t w = count_wrong(b);
		MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		res.wrong = (long long)w;
	}
	return res;
}

/* ---- output, as bench/table.go ---- */

static void print_result(const struct result *r) {
	if (!r) {
		printf("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
		return;
	}
	char t[32], w[32];
	if (r->time_us >= 10000) snprintf(t, sizeof t, "%7.0f", r->time_us);
	else if (r->time_us >= 100) snprintf(t, sizeof t, "%7.1f", r->time_us);
	else snprintf(t, sizeof t, "%7.2f", r->time_us);
	if (r->wrong >= 0) snprintf(w, sizeof w, "%lld", r->wrong);
	else snprintf(w, sizeof w, "N/A");
	printf("  %7s  %6.2f  %6.2f  %6s", t, r->algbw, r->busbw, w);
}

static void print_header(void) {
	printf("#\n");
	printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "", "", "");
	printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type", "redop", "root",
	       "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
	printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "", "(us)",
	       "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

/* ---- the step (--step) ---- */

#define MAX_STEP_CALLS 4096 /* bench.maxStepCalls */

static int parse_step(const char *spec, int64_t *sizes) {
	char buf[1024];
	int n = 0;
	snprintf(buf, sizeof buf, "%s", spec);
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		long count = 1;
		char *x = strchr(tok, 'x');
		if (x) {
			*x = 0;
			count = atol(tok);
			tok = x + 1;
		}
		int64_t b = parse_size(tok);
		if (count < 1 || n + count > MAX_STEP_CALLS || b < dt->size || b % dt->size) die("bad --step");
		for (long i = 0; i < count; i++) sizes[n++] = b;
	}
	return n;
}

static double median_of(double *v, int n) {
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void step_run(void **bufs, const int64_t *sizes, int ncalls) {
	for (int k = 0; k < ncalls; k++)
		MPI_Allreduce(MPI_IN_PLACE, bufs[k], (int)(sizes[k] / dt->size), dt->mpi, mpiop, MPI_COMM_WORLD);
}

static int64_t step_check(void **bufs, const int64_t *sizes, int ncalls) {
	int64_t off = 0, wrong = 0;
	for (int k = 0; k < ncalls; k++) {
		int64_t cnt = sizes[k] / dt->size;
		for (int64_t i = 0; i < cnt; i++) set(bufs[k], i, value(rank, off + i));
		off += cnt;
	}
	step_run(bufs, sizes, ncalls);
	off = 0;
	for (int k = 0; k < ncalls; k++) {
		int64_t cnt = sizes[k] / dt->size;
		for (int64_t i = 0; i < cnt; i++) wrong += !exact(bufs[k], i, reduced(off + i));
		off += cnt;
	}
	MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	return wrong;
}

/* run_step is main's --step: it returns the wrong elements (-1 unchecked). */
static int64_t run_step(const char *spec, int rounds) {
	static int64_t sizes[MAX_STEP_CALLS];
	int ncalls = parse_step(spec, sizes);
	void **bufs = malloc(ncalls * sizeof *bufs);
	double *stamps = malloc(iters * sizeof *stamps), *means = malloc(rounds * sizeof *means),
	       *medians = malloc(rounds * sizeof *medians);
	if (!bufs || !stamps || !means || !medians) die("out of memory");
	int64_t total = 0;
	for (int k = 0; k < ncalls; k++) {
		if (alloc_mem) MPI_Alloc_mem((MPI_Aint)sizes[k], MPI_INFO_NULL, &bufs[k]);
		else bufs[k] = malloc(sizes[k]);
		if (!bufs[k]) die("out of memory");
		for (int64_t i = 0; i < sizes[k] / dt->size; i++) set(bufs[k], i, 1); /* first touch outside the timing */
		total += sizes[k];
	}
	pat_op = opname;
	int64_t cap = dt->exact / nranks;
	pat_m = cap < 1 ? 1 : cap > 100 ? 100 : cap;
	if (rank == 0) {
		printf("# mpibench --step: %d ranks, step %s (%d AllReduces, in place) %s %s warmup iters: %d iters: %d rounds: %d "
		       "validation: %d local register: %d\n",
		       nranks, spec, ncalls, dt->name, opname, warmup, iters, rounds, check, alloc_mem);
		printf("#\n# %5s  %5s  %10s  %10s  %8s  %6s  %7s  %7s  %6s  %6s  %6s\n", "mode", "colls", "size", "count", "type",
		       "redop", "time", "median", "algbw", "busbw", "#wrong");
		printf("# %5s  %5s  %10s  %10s  %8s  %6s  %7s  %7s  %6s  %6s  %6s\n", "", "", "(B)", "(elements)", "", "", "(us)",
		       "(us)", "(GB/s)", "(GB/s)", "");
	}
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < warmup; i++) step_run(bufs, sizes, ncalls);
		MPI_Barrier(MPI_COMM_WORLD);
		double start = MPI_Wtime(), prev = start;
		for (int i = 0; i < iters; i++) {
			step_run(bufs, sizes, ncalls);
			double now = MPI_Wtime();
			stamps[i] = now - prev;
			prev = now;
		}
		double t[2] = {(prev - start) / iters, median_of(stamps, iters)};
		MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		means[r] = t[0], medians[r] = t[1];
	}
	struct result res;
	double t = median_of(means, rounds);
	res.time_us = t * 1e6;
	res.median_us = median_of(medians, rounds) * 1e6;
	res.algbw = t > 0 ? (double)total / t / 1e9 : 0;
	res.busbw = res.algbw * bus_factor(ALLREDUCE);
	res.wrong = check ? (long long)step_check(bufs, sizes, ncalls) : -1;
	if (rank == 0) {
		char tm[32], md[32], w[32];
		snprintf(tm, sizeof tm, res.time_us >= 10000 ? "%7.0f" : res.time_us >= 100 ? "%7.1f" : "%7.2f", res.time_us);
		snprintf(md, sizeof md, res.median_us >= 10000 ? "%7.0f" : res.median_us >= 100 ? "%7.1f" : "%7.2f", res.median_us);
		if (res.wrong >= 0) snprintf(w, sizeof w, "%lld", res.wrong);
		else snprintf(w, sizeof w, "N/A");
		printf("  %5s  %5d  %10lld  %10lld  %8s  %6s  %7s  %7s  %6.2f  %6.2f  %6s\n", "calls", ncalls, (long long)total,
		       (long long)(total / dt->size), dt->name, opname, tm, md, res.algbw, res.busbw, w);
		fflush(stdout);
	}
	for (int k = 0; k < ncalls; k++) {
		if (alloc_mem) MPI_Free_mem(bufs[k]);
		else free(bufs[k]);
	}
	free(bufs), free(stamps), free(means), free(medians);
	return res.wrong;
}

static void report_ranks(int64_t total_wrong);

static void usage(void) {
	die("usage: mpibench [-o OP[,OP...]|all] [-b MIN] [-e MAX] [-f F | -i STEP] [-n ITERS] [-w WARMUP] [-c 0|1] "
	    "[-d float|double|int8|uint8|int32|int64] [--redop sum|prod|max|min] [-r ROOT] [-R 0|1] "
	    "[--step COUNTxBYTES,... [--rounds R]]");
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);

	int colls[NCOLLS], ncolls = 0;
	char opbuf[256] = "allreduce";
	int64_t minb = 8, maxb = 32 << 20, step = 0;
	int factor = 2;
	const char *dname = "float", *step_spec = NULL;
	int rounds = 5;
	static struct option longopts[] = {
		{"op", required_argument, 0, 'o'},      {"minbytes", required_argument, 0, 'b'},
		{"maxbytes", required_argument, 0, 'e'}, {"stepfactor", required_argument, 0, 'f'},
		{"stepbytes", required_argument, 0, 'i'}, {"iters", required_argument, 0, 'n'},
		{"warmup_iters", required_argument, 0, 'w'}, {"check", required_argument, 0, 'c'},
		{"datatype", required_argument, 0, 'd'}, {"root", required_argument, 0, 'r'},
		{"redop", required_argument, 0, 'O'},    {"alloc_mem", required_argument, 0, 'R'},
		{"step", required_argument, 0, 'S'},     {"rounds", required_argument, 0, 'N'},
		{0, 0, 0, 0},
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "o:b:e:f:i:n:w:c:d:r:R:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'o': snprintf(opbuf, sizeof opbuf, "%s", optarg); break;
		case 'b': minb = parse_size(optarg); break;
		case 'e': maxb = parse_size(optarg); break;
		case 'f': factor = atoi(optarg); break;
		case 'i': step = parse_size(optarg); factor = 1; break;
		case 'n': iters = atoi(optarg); break;
		case 'w': warmup = atoi(optarg); break;
		case 'c': check = atoi(optarg); break;
		case 'd': dname = optarg; break;
		case 'r': root = atoi(optarg); break;
		case 'O': opname = optarg; break;
		case 'R': alloc_mem = atoi(optarg); break;
		case 'S': step_spec = optarg; break;
		case 'N': rounds = atoi(optarg); break;
		default: usage();
		}
	}
	if (iters < 1 || warmup < 0 || root < 0 || root >= nranks || maxb < minb || factor < 1 || (factor == 1 && step < 1))
		usage();
	if (strcmp(opbuf, "all") == 0) {
		for (int c = 0; c < NCOLLS; c++) colls[ncolls++] = c;
	} else {
		for (char *tok = strtok(opbuf, ","); tok; tok = strtok(NULL, ",")) {
			int c = 0;
			while (c < NCOLLS && strcmp(coll_names[c], tok) != 0) c++;
			if (c == NCOLLS) die("unknown collective");
			colls[ncolls++] = c;
		}
	}
	dt = NULL;
	for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
		if (strcmp(dtypes[i].name, dname) == 0) dt = &dtypes[i];
	if (!dt) die("unknown data type");
	struct redop ops[] = {{"sum", MPI_SUM}, {"prod", MPI_PROD}, {"max", MPI_MAX}, {"min", MPI_MIN}};
	mpiop = MPI_OP_NULL;
	for (size_t i = 0; i < 4; i++)
		if (strcmp(ops[i].name, opname) == 0) mpiop = ops[i].op;
	if (mpiop == MPI_OP_NULL) die("unknown reduction (MPI has no avg)");
	int64_t total_wrong = 0;
	if (step_spec) {
		if (rounds < 1) usage();
		int64_t w = run_step(step_spec, rounds);
		total_wrong = w > 0 ? w : 0;
		report_ranks(total_wrong);
		if (rank == 0) printf("#\n");
		MPI_Finalize();
		return total_wrong ? 1 : 0;
	}

	/* The sweep, as bench.Sizes. */
	int64_t sizes[4096];
	int nsizes = 0;
	for (int64_t s = minb; s <= maxb && nsizes < 4096;) {
		sizes[nsizes++] = s;
		if (factor > 1 && s == 0) s = 1;
		else if (factor > 1 && s <= maxb / factor) s *= factor;
		else if (factor == 1 && s <= maxb - step) s += step;
		else break;
	}
	int64_t maxelems = 1;
	for (int c = 0; c < ncolls; c++)
		for (int s = 0; s < nsizes; s++) {
			struct layout l = layout_of(colls[c], sizes[s]);
			if (l.sendcount > maxelems) maxelems = l.sendcount;
			if (l.recvcount > maxelems) maxelems = l.recvcount;
		}
	void *sbuf = NULL, *rbuf = NULL;
	if (alloc_mem) {
		MPI_Alloc_mem((MPI_Aint)(maxelems * dt->size), MPI_INFO_NULL, &sbuf);
		MPI_Alloc_mem((MPI_Aint)(maxelems * dt->size), MPI_INFO_NULL, &rbuf);
	} else {
		sbuf = malloc(maxelems * dt->size), rbuf = malloc(maxelems * dt->size);
	}
	double *stamps = malloc(iters * sizeof *stamps);
	int *vc = malloc(4 * nranks * sizeof(int));
	if (!sbuf || !rbuf || !stamps || !vc) die("out of memory");
	memset(sbuf, 1, maxelems * dt->size); /* first touch outside the timing */
	memset(rbuf, 1, maxelems * dt->size);

	if (rank == 0)
		printf("# mpibench %s: %d ranks, minBytes %lld maxBytes %lld step: %lld(%s) warmup iters: %d iters: %d validation: %d\n",
		       ncolls == NCOLLS ? "all" : opbuf, nranks, (long long)minb, (long long)maxb,
		       (long long)(factor > 1 ? factor : step), factor > 1 ? "factor" : "bytes", warmup, iters, check);

	double bwsum = 0;
	int nbw = 0;
	for (int ci = 0; ci < ncolls; ci++) {
		int c = colls[ci];
		int reduces = c == ALLREDUCE || c == REDUCESCATTER || c == REDUCE;
		int rooted = c == BROADCAST || c == REDUCE;
		int has_inplace = c != ALLTOALL && c != ALLTOALLV;
		pat_op = reduces ? opname : "sum";
		int64_t cap = dt->exact / nranks;
		pat_m = cap < 1 ? 1 : cap > 100 ? 100 : cap;
		pat_ma = cap - 2 < 1 ? 1 : cap - 2 > 100 ? 100 : cap - 2;
		if (rank == 0) {
			printf("#\n# Collective: %s\n", coll_names[c]);
			print_header();
		}
		for (int s = 0; s < nsizes; s++) {
			struct bcase b = {.coll = c, .l = layout_of(c, sizes[s]), .sbuf = sbuf, .rbuf = rbuf};
			b.sc = vc, b.sd = vc + nranks, b.rc = vc + 2 * nranks, b.rd = vc + 3 * nranks;
			if (c == ALLTOALLV) {
				int so = 0, ro = 0;
				for (int j = 0; j < nranks; j++) {
					b.sc[j] = (int)vcount(rank, j, b.l.count), b.sd[j] = so, so += b.sc[j];
					b.rc[j] = (int)vcount(j, rank, b.l.count), b.rd[j] = ro, ro += b.rc[j];
				}
			}
			struct result out = measure(&b, stamps), in;
			if (has_inplace) {
				b.inplace = 1;
				in = measure(&b, stamps);
			}
			if (rank == 0) {
				printf("%12lld  %12lld  %8s  %6s  %6d", (long long)b.l.bytes, (long long)b.l.count, dt->name,
				       reduces ? opname : "none", rooted ? root : -1);
				print_result(&out);
				print_result(has_inplace ? &in : NULL);
				printf("\n");
				fflush(stdout);
			}
			total_wrong += out.wrong > 0 ? out.wrong : 0;
			bwsum += out.busbw, nbw++;
			if (has_inplace) {
				total_wrong += in.wrong > 0 ? in.wrong : 0;
				bwsum += in.busbw, nbw++;
			}
		}
	}
	report_ranks(total_wrong);
	if (rank == 0) printf("# Avg bus bandwidth    : %.5g \n#\n", nbw ? bwsum / nbw : 0);
	if (alloc_mem) MPI_Free_mem(sbuf), MPI_Free_mem(rbuf);
	else free(sbuf), free(rbuf);
	free(stamps), free(vc);
	MPI_Finalize();
	return total_wrong ? 1 : 0;
}

/* report_ranks prints the ranks' pids and the verdict. The pids are gathered
 * after the sweep, so that with -w 0 the first timed calls follow MPI_Init and
 * one MPI_Barrier only, as those of hcclrun bench --first do. */
static void report_ranks(int64_t total_wrong) {
	char host[64] = "";
	gethostname(host, sizeof host - 1);
	long long pid = getpid();
	long long *pids = malloc(nranks * sizeof *pids);
	char *hosts = malloc(nranks * 64);
	MPI_Gather(&pid, 1, MPI_LONG_LONG, pids, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
	MPI_Gather(host, 64, MPI_CHAR, hosts, 64, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("#\n# Using ranks\n");
		for (int r = 0; r < nranks; r++) printf("#  Rank %2d Pid %6lld on %10s\n", r, pids[r], hosts + 64 * r);
		printf("# Out of bounds values : %lld %s\n", (long long)total_wrong, total_wrong ? "FAILED" : "OK");
	}
	free(pids), free(hosts);
}
