/*
 * badinput.c: what libhccl answers to bad input, for cabi_test.go.
 *
 *   badinput args      every rank makes the same bad calls, each of which
 *                      must fail on this rank with its code and message
 *                      (nothing is sent), then a good call must still work;
 *                      prints "rank R args ok"
 *   badinput mismatch  rank 0 calls AllReduce with one element more than
 *                      the others; every rank prints the code and message
 *                      it got: "rank R result CODE: MESSAGE"
 *   badinput abort     after a Barrier the last rank calls hcclCommAbort,
 *                      the others an AllReduce; printed as for mismatch
 *   badinput graphargs as args for graph mode: bad handles, bad recording
 *                      calls, a compile that returns the first of them, a
 *                      good graph launched, destroyed handles; prints
 *                      "rank R graphargs ok"
 *   badinput graphmismatch  rank 0 records an AllReduce of one element
 *                      more than the others; every rank prints what its
 *                      hcclGraphCompile returned, as for mismatch
 *   badinput graphcap  rank 0 compiles with another fusion cap; as for
 *                      graphmismatch
 *   badinput graphabort  a graph compiled and launched once, then the
 *                      last rank calls hcclCommAbort, the others launch
 *                      it again; printed as for mismatch
 */
#include <hccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank = -1, nranks;
static hcclComm_t comm;
static int failures;

/* expect checks that call returned want with a message containing text: comm's last
 * error, or with expect_on(NULL, ...) the library's, which calls without a comm set. */
#define expect(call, want, text) check_result((call), (want), (text), #call, comm)
#define expect_on(c, call, want, text) check_result((call), (want), (text), #call, (c))

static void check_result(hcclResult_t got, hcclResult_t want, const char *text, const char *what, hcclComm_t c) {
	const char *msg = hcclCommGetLastError(c);
	if (got != want || (text && !strstr(msg, text))) {
		printf("rank %d: FAIL %s = %d (%s), want %d with \"%s\"; message: %s\n", rank, what, got,
		       hcclGetErrorString(got), want, text ? text : "", msg);
		failures++;
	}
}

static void args(void) {
	int r;
	char rankname[32];
	snprintf(rankname, sizeof rankname, "rank %d", rank);
	float buf[8] = {0}, out[8 * 64] = {0};
	hcclComm_t bogus = (hcclComm_t)(uintptr_t)0xdeadbeef;

	expect_on(NULL, hcclCommInitFromEnv(NULL), hcclInvalidArgument, "comm is NULL");
	expect_on(NULL, hcclCommRank(NULL, &r), hcclInvalidArgument, "comm is NULL");
	expect_on(NULL, hcclCommRank(bogus, &r), hcclInvalidArgument, "not a communicator");
	expect(hcclCommRank(comm, NULL), hcclInvalidArgument, "NULL");
	expect_on(NULL, hcclAllReduce(buf, buf, 8, hcclFloat, hcclSum, NULL), hcclInvalidArgument, "comm is NULL");
	if (strcmp(hcclGetErrorString(hcclMismatch), hcclGetErrorString(hcclAborted)) == 0 ||
	    strcmp(hcclGetErrorString((hcclResult_t)99), "unknown result code") != 0) {
		printf("rank %d: FAIL hcclGetErrorString\n", rank);
		failures++;
	}

	expect(hcclAllReduce(NULL, buf, 8, hcclFloat, hcclSum, comm), hcclInvalidArgument, "sendbuff is NULL");
	expect(hcclAllReduce(buf, NULL, 8, hcclFloat, hcclSum, comm), hcclInvalidArgument, "recvbuff is NULL");
	expect(hcclAllReduce(buf, out, 8, hcclFloat, hcclSum, comm), hcclSuccess, NULL);
	expect(hcclAllReduce(buf, buf, 8, (hcclDataType_t)99, hcclSum, comm), hcclInvalidArgument, "unknown datatype 99");
	expect(hcclAllReduce(buf, buf, 8, (hcclDataType_t)-1, hcclSum, comm), hcclInvalidArgument, "unknown datatype");
	expect(hcclAllReduce(buf, buf, 8, hcclFloat, (hcclRedOp_t)99, comm), hcclInvalidArgument, "unknown reduction");
	expect(hcclAllReduce(buf, buf, 8, hcclInt32, hcclAvg, comm), hcclInvalidArgument, "Avg");
	expect(hcclAllReduce(buf, buf, SIZE_MAX, hcclFloat, hcclSum, comm), hcclInvalidArgument, "overflows");
	expect(hcclAllReduce(buf, buf, SIZE_MAX, hcclFloat, hcclSum, comm), hcclInvalidArgument, rankname);
	expect(hcclAllReduce(buf, buf + 1, 4, hcclFloat, hcclSum, comm), hcclInvalidArgument, "overlap");
	expect(hcclAllGather(buf, out, SIZE_MAX / 2, hcclFloat, comm), hcclInvalidArgument, "overflows");
	expect(hcclReduceScatter(out, buf, SIZE_MAX / 4, hcclInt8, hcclSum, comm), hcclInvalidArgument, "overflows");
	expect(hcclBroadcast(buf, buf, 8, hcclFloat, -1, comm), hcclInvalidArgument, "root -1");
	expect(hcclBcast(buf, 8, hcclFloat, nranks, comm), hcclInvalidArgument, "root");
	expect(hcclReduce(buf, buf, 8, hcclFloat, hcclSum, nranks + 3, comm), hcclInvalidArgument, "root");
	expect(hcclReduce(buf, NULL, 8, hcclFloat, hcclSum, rank, comm), hcclInvalidArgument, "recvbuff is NULL");
	expect(hcclSend(buf, 8, hcclFloat, rank, comm), hcclInvalidArgument, "peer");
	expect(hcclRecv(buf, 8, hcclFloat, -5, comm), hcclInvalidArgument, "peer -5");
	expect(hcclAlltoAllV(buf, NULL, NULL, out, NULL, NULL, hcclFloat, comm), hcclInvalidArgument, "sendcounts is NULL");

	void *p = (void *)1;
	expect_on(NULL, hcclMemAlloc(NULL, 8), hcclInvalidArgument, "ptr is NULL");
	expect_on(NULL, hcclMemAlloc(&p, SIZE_MAX), hcclInvalidArgument, "overflows");
	if (p != NULL) {
		printf("rank %d: FAIL hcclMemAlloc left *ptr set after failing\n", rank);
		failures++;
	}
	expect_on(NULL, hcclMemFree(buf), hcclInvalidArgument, "MemAlloc did not return");
	expect_on(NULL, hcclMemFree(NULL), hcclSuccess, NULL);
	expect_on(NULL, hcclGetVersion(NULL), hcclInvalidArgument, "NULL");

	/* None of that touched the job: a good call still works, on every rank. */
	for (int i = 0; i < 8; i++) buf[i] = (float)(rank + i);
	expect(hcclAllReduce(buf, buf, 8, hcclFloat, hcclSum, comm), hcclSuccess, NULL);
	for (int i = 0; i < 8; i++)
		if (buf[i] != (float)(nranks * (nranks - 1) / 2 + nranks * i)) {
			printf("rank %d: FAIL AllReduce after the bad calls: buf[%d] = %g\n", rank, i, buf[i]);
			failures++;
		}

	/* A destroyed communicator is told apart from one never made. */
	hcclComm_t gone = comm;
	expect(hcclCommDestroy(comm), hcclSuccess, NULL);
	expect_on(gone, hcclAllReduce(buf, buf, 8, hcclFloat, hcclSum, gone), hcclClosed, "destroyed");
	expect_on(gone, hcclCommDestroy(gone), hcclClosed, "destroyed");
	if (!failures) printf("rank %d args ok\n", rank);
}

static void graphargs(void) {
	char rankname[32];
	snprintf(rankname, sizeof rankname, "rank %d", rank);
	float buf[8] = {0}, out[8 * 64] = {0};
	size_t counts[64] = {0};
	int steps;
	hcclGraph_t g, bogus = (hcclGraph_t)(uintptr_t)0xdeadbeef;
	hcclGraphExec_t e;

	expect_on(NULL, hcclGraphCreate(NULL, &g), hcclInvalidArgument, "comm is NULL");
	expect(hcclGraphCreate(comm, NULL), hcclInvalidArgument, "graph is NULL");
	expect_on(NULL, hcclGraphAllReduce(buf, buf, 8, hcclFloat, hcclSum, NULL), hcclInvalidArgument, "graph is NULL");
	expect_on(NULL, hcclGraphAllReduce(buf, buf, 8, hcclFloat, hcclSum, bogus), hcclInvalidArgument, "not one hcclGraphCreate made");
	expect_on(NULL, hcclGraphBarrier(NULL), hcclInvalidArgument, "graph is NULL");
	expect_on(NULL, hcclGraphCompile(NULL, &e), hcclInvalidArgument, "graph is NULL");
	expect_on(NULL, hcclGraphLaunch(NULL), hcclInvalidArgument, "exec is NULL");
	expect_on(NULL, hcclGraphLaunch((hcclGraphExec_t)(uintptr_t)0xdeadbeef), hcclInvalidArgument, "not one hcclGraphCompile made");
	expect_on(NULL, hcclGraphDestroy(NULL), hcclInvalidArgument, "graph is NULL");
	expect_on(NULL, hcclGraphExecDestroy(NULL), hcclInvalidArgument, "exec is NULL");
	/* A communicator's handle is neither. */
	expect_on(NULL, hcclGraphBarrier((hcclGraph_t)comm), hcclInvalidArgument, "not one hcclGraphCreate made");

	/* Every bad recording call fails there, on this rank, and records nothing. */
	expect(hcclGraphCreate(comm, &g), hcclSuccess, NULL);
	expect(hcclGraphAllReduce(NULL, buf, 8, hcclFloat, hcclSum, g), hcclInvalidArgument, "sendbuff is NULL");
	expect(hcclGraphAllReduce(buf, NULL, 8, hcclFloat, hcclSum, g), hcclInvalidArgument, "recvbuff is NULL");
	expect(hcclGraphAllReduce(buf, buf, 8, (hcclDataType_t)99, hcclSum, g), hcclInvalidArgument, "unknown datatype 99");
	expect(hcclGraphAllReduce(buf, buf, 8, hcclFloat, (hcclRedOp_t)99, g), hcclInvalidArgument, "unknown reduction");
	expect(hcclGraphAllReduce(buf, buf, 8, hcclInt32, hcclAvg, g), hcclInvalidArgument, "GraphAllReduce");
	expect(hcclGraphAllReduce(buf, buf, SIZE_MAX, hcclFloat, hcclSum, g), hcclInvalidArgument, "overflows");
	expect(hcclGraphAllReduce(buf, buf, SIZE_MAX, hcclFloat, hcclSum, g), hcclInvalidArgument, rankname);
	expect(hcclGraphAllReduce(buf, buf + 1, 4, hcclFloat, hcclSum, g), hcclInvalidArgument, "overlap");
	expect(hcclGraphAllGather(buf, out, SIZE_MAX / 2, hcclFloat, g), hcclInvalidArgument, "overflows");
	expect(hcclGraphReduceScatter(out, NULL, 8, hcclFloat, hcclSum, g), hcclInvalidArgument, "recvbuff is NULL");
	expect(hcclGraphBroadcast(buf, buf, 8, hcclFloat, -1, g), hcclInvalidArgument, "root -1");
	expect(hcclGraphBroadcast(buf, out, 8, hcclFloat, 0, g), hcclInvalidArgument, "in place only");
	expect(hcclGraphReduce(buf, NULL, 8, hcclFloat, hcclSum, rank, g), hcclInvalidArgument, "recvbuff is NULL");
	expect(hcclGraphReduce(buf, buf, 8, hcclFloat, hcclSum, nranks, g), hcclInvalidArgument, "GraphReduce");
	expect(hcclGraphAlltoAll(NULL, out, 8, hcclFloat, g), hcclInvalidArgument, "sendbuff is NULL");
	expect(hcclGraphAlltoAllV(buf, NULL, counts, out, counts, counts, hcclFloat, g), hcclInvalidArgument, "sendcounts is NULL");
	expect(hcclGraphSetFuseBytes(g, 1 << 20), hcclSuccess, NULL);
	/* The graph keeps its first failure for Compile, which every rank reaches alike. */
	expect(hcclGraphCompile(g, &e), hcclInvalidArgument, "graph node 0: hccl: GraphAllReduce");
	expect(hcclGraphCompile(g, &e), hcclInvalidArgument, "sendbuff is NULL");
	expect(hcclGraphCompile(g, NULL), hcclInvalidArgument, "exec is NULL");
	expect(hcclGraphDestroy(g), hcclSuccess, NULL);
	expect_on(NULL, hcclGraphDestroy(g), hcclClosed, "graph was destroyed");
	expect_on(NULL, hcclGraphAllReduce(buf, buf, 8, hcclFloat, hcclSum, g), hcclClosed, "graph was destroyed");

	/* A good graph works after all that, and its exec's handle is checked too. */
	expect(hcclGraphCreate(comm, &g), hcclSuccess, NULL);
	expect(hcclGraphAllReduce(buf, buf, 8, hcclFloat, hcclSum, g), hcclSuccess, NULL);
	expect(hcclGraphBarrier(g), hcclSuccess, NULL);
	expect(hcclGraphCompile(g, &e), hcclSuccess, NULL);
	expect_on(NULL, hcclGraphLaunch((hcclGraphExec_t)g), hcclInvalidArgument, "not one hcclGraphCompile made");
	expect(hcclGraphExecSteps(e, NULL), hcclInvalidArgument, "steps is NULL");
	expect(hcclGraphExecSteps(e, &steps), hcclSuccess, NULL);
	if (steps != 2) {
		printf("rank %d: FAIL hcclGraphExecSteps = %d, want 2\n", rank, steps);
		failures++;
	}
	for (int it = 0; it < 2; it++) {
		for (int i = 0; i < 8; i++) buf[i] = (float)(rank + i + it);
		expect(hcclGraphLaunch(e), hcclSuccess, NULL);
		for (int i = 0; i < 8; i++)
			if (buf[i] != (float)(nranks * (nranks - 1) / 2 + nranks * (i + it))) {
				printf("rank %d: FAIL launch %d: buf[%d] = %g\n", rank, it, i, buf[i]);
				failures++;
			}
	}
	/* An exec outlives its graph; destroyed, it is told apart. */
	expect(hcclGraphDestroy(g), hcclSuccess, NULL);
	expect(hcclGraphLaunch(e), hcclSuccess, NULL);
	expect(hcclGraphExecDestroy(e), hcclSuccess, NULL);
	expect_on(NULL, hcclGraphLaunch(e), hcclClosed, "exec was destroyed");
	expect_on(NULL, hcclGraphExecDestroy(e), hcclClosed, "exec was destroyed");

	/* A destroyed communicator leaves its graphs and execs failing until destroyed. */
	hcclGraph_t g2;
	expect(hcclGraphCreate(comm, &g2), hcclSuccess, NULL);
	expect(hcclGraphAllReduce(buf, buf, 8, hcclFloat, hcclSum, g2), hcclSuccess, NULL);
	expect(hcclGraphCompile(g2, &e), hcclSuccess, NULL);
	expect(hcclCommDestroy(comm), hcclSuccess, NULL);
	expect_on(NULL, hcclGraphAllReduce(buf, buf, 8, hcclFloat, hcclSum, g2), hcclClosed, "comm was destroyed");
	expect_on(NULL, hcclGraphAllReduce(buf, buf, 8, hcclFloat, hcclSum, g2), hcclClosed, rankname);
	expect_on(NULL, hcclGraphLaunch(e), hcclClosed, "comm was destroyed");
	expect_on(NULL, hcclGraphExecDestroy(e), hcclSuccess, NULL);
	expect_on(NULL, hcclGraphDestroy(g2), hcclSuccess, NULL);
	if (!failures) printf("rank %d graphargs ok\n", rank);
}

static void report(hcclResult_t res) {
	printf("rank %d result %d: %s\n", rank, res, res == hcclSuccess ? "" : hcclCommGetLastError(comm));
	fflush(stdout);
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "args";
	hcclResult_t res = hcclCommInitFromEnv(&comm);
	if (res != hcclSuccess) {
		printf("FAIL init: %s: %s\n", hcclGetErrorString(res), hcclCommGetLastError(NULL));
		return 1;
	}
	hcclCommRank(comm, &rank);
	hcclCommCount(comm, &nranks);
	float buf[16] = {0};
	if (strcmp(mode, "args") == 0) {
		args();
		return failures ? 1 : 0;
	} else if (strcmp(mode, "graphargs") == 0) {
		graphargs();
		return failures ? 1 : 0;
	} else if (strcmp(mode, "graphmismatch") == 0) {
		hcclGraph_t g;
		hcclGraphExec_t e;
		res = hcclGraphCreate(comm, &g);
		if (res == hcclSuccess) res = hcclGraphAllReduce(buf, buf, 8, hcclFloat, hcclSum, g);
		if (res == hcclSuccess) res = hcclGraphAllReduce(buf, buf, rank == 0 ? 9 : 8, hcclFloat, hcclSum, g);
		if (res == hcclSuccess) res = hcclGraphCompile(g, &e);
		report(res);
		/* A failed Compile leaves the communicator usable: close it, or
		 * hcclrun takes the first rank out as one that forgot to. */
		hcclCommDestroy(comm);
	} else if (strcmp(mode, "graphcap") == 0) {
		hcclGraph_t g;
		hcclGraphExec_t e;
		res = hcclGraphCreate(comm, &g);
		if (res == hcclSuccess) res = hcclGraphAllReduce(buf, buf, 8, hcclFloat, hcclSum, g);
		if (res == hcclSuccess && rank == 0) res = hcclGraphSetFuseBytes(g, 1 << 20);
		if (res == hcclSuccess) res = hcclGraphCompile(g, &e);
		report(res);
		hcclCommDestroy(comm); /* as in graphmismatch */
	} else if (strcmp(mode, "graphabort") == 0) {
		hcclGraph_t g;
		hcclGraphExec_t e;
		res = hcclGraphCreate(comm, &g);
		if (res == hcclSuccess) res = hcclGraphAllReduce(buf, buf, 8, hcclFloat, hcclSum, g);
		if (res == hcclSuccess) res = hcclGraphCompile(g, &e);
		if (res == hcclSuccess) res = hcclGraphLaunch(e);
		if (res == hcclSuccess) res = hcclBarrier(comm);
		if (res == hcclSuccess) res = rank == nranks - 1 ? hcclCommAbort(comm) : hcclGraphLaunch(e);
		report(res);
	} else if (strcmp(mode, "mismatch") == 0) {
		report(hcclAllReduce(buf, buf, rank == 0 ? 9 : 8, hcclFloat, hcclSum, comm));
	} else if (strcmp(mode, "abort") == 0) {
		/* After a Barrier, so that the abort finds every rank out of Init; a
		 * rank still in the Barrier reports the Barrier's result. */
		res = hcclBarrier(comm);
		if (res == hcclSuccess) res = rank == nranks - 1 ? hcclCommAbort(comm) : hcclAllReduce(buf, buf, 8, hcclFloat, hcclSum, comm);
		report(res);
	} else {
		printf("badinput: unknown mode %s\n", mode);
		return 2;
	}
	return 0;
}
