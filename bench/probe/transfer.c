// transfer: what moving one block from one process to another costs on this
// host, each way a rank could take, so that a gap in an AllGather or an
// AlltoAll at np 2 can be told apart from the price of the kernel's copy.
// Two processes, bound to CPU 0 (the reader) and CPU 1 (the writer). Before
// every try the writer writes its block (so that its lines are dirty in its
// core's cache, as a rank's send buffer is) and the reader then times:
//
//   process_vm_readv  the writer's private block, one kernel copy (the
//                     runtime's in-place read; Open MPI's CMA)
//   vmsplice+read     the writer spliced its block into a pipe before the
//                     try (its time is printed apart); the reader reads it
//   memcpy from shm   the same bytes, written into a shared mapping, copied
//                     out in user space: what a rank could do if its peer's
//                     send buffer were mapped in its address space
//   memcpy local      a block of the reader's own, hot: the floor
//
// The first two are what a rank can do with a peer's ordinary memory; the
// third needs memory both map, which a Go slice is not.
//
// With "clean" the writer writes its blocks once, before the first try, as
// the benchmarks (hcclrun bench, bench/mpi/mpibench.c) fill their send
// buffers once: the reader then copies lines that both cores may hold.
//
//   cc -O2 -o transfer transfer.c && ./transfer [bytes [tries [clean]]]
//
// Prints, per way, the median and the 10th and 90th percentiles in us.
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { readv_way, pipe_way, shm_way, local_way, ways };

static const char *names[ways] = {"process_vm_readv", "vmsplice+read", "memcpy from shm", "memcpy local"};

// The shared page: the reader asks for try k by storing 2k-1 in turn, the
// writer answers 2k once the block is written (and spliced); -1 stops it.
struct control {
	_Atomic long turn;
	int way;
	int clean;    // the blocks are written once, not before every try
	double spliced_us; // the writer's vmsplice of the last try
};

static double now_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void bind_cpu(int cpu) {
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0)
		perror("transfer: sched_setaffinity (running unbound)");
}

static int by_value(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void writer(struct control *c, char *block, char *shared, int pipe_in, size_t n) {
	bind_cpu(1);
	for (long k = 1;; k++) {
		long t;
		while ((t = atomic_load(&c->turn)) != 2 * k - 1)
			if (t < 0)
				_exit(0);
		if (!c->clean || k == 1) {
			memset(block, (int)k, n);
			memset(shared, (int)k, n);
		}
		if (c->way == pipe_way) {
			double start = now_us();
			for (size_t done = 0; done < n;) {
				struct iovec v = {block + done, n - done};
				ssize_t r = vmsplice(pipe_in, &v, 1, 0);
				if (r <= 0) {
					perror("transfer: vmsplice");
					_exit(1);
				}
				done += r;
			}
			c->spliced_us = now_us() - start;
		}
		atomic_store(&c->turn, 2 * k);
	}
}

int main(int argc, char **argv) {
	size_t n = argc > 1 ? strtoul(argv[1], 0, 0) : 512 << 10;
	int tries = argc > 2 ? atoi(argv[2]) : 400;
	int clean = argc > 3 && strcmp(argv[3], "clean") == 0;
	if (n == 0 || tries <= 0 || (argc > 3 && !clean)) {
		fprintf(stderr, "usage: transfer [bytes [tries [clean]]]\n");
		return 2;
	}
	struct control *c = mmap(0, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *shared = mmap(0, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *block = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	char *own = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	char *dst = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	if (c == MAP_FAILED || shared == MAP_FAILED || !block || !own || !dst) {
		perror("transfer: allocation");
		return 1;
	}
	c->clean = clean;
	memset(block, 1, n);
	memset(own, 2, n);
	memset(dst, 0, n);
	// The writer splices a whole block before answering, so the pipe must
	// hold one; a pipe that cannot (pipe-max-size) leaves that way out.
	int p[2];
	int pipe_ok = pipe(p) == 0 && fcntl(p[1], F_SETPIPE_SZ, (int)(n < 65536 ? 65536 : n)) >= (long)n;
	if (!pipe_ok)
		fprintf(stderr, "transfer: no pipe of %zu bytes here (see /proc/sys/fs/pipe-max-size): vmsplice+read left out\n", n);
	pid_t pid = fork();
	if (pid < 0) {
		perror("transfer: fork");
		return 1;
	}
	if (pid == 0)
		writer(c, block, shared, p[1], n);
	bind_cpu(0);

	double *took[ways], *spliced = calloc(tries, sizeof(double));
	for (int w = 0; w < ways; w++)
		took[w] = calloc(tries, sizeof(double));
	int status = 1; // until every try is done and checked
	long k = 0;
	for (int i = 0; i < tries; i++) {
		for (int w = 0; w < ways; w++) {
			if (w == pipe_way && !pipe_ok)
				continue;
			k++;
			c->way = w;
			atomic_store(&c->turn, 2 * k - 1);
			while (atomic_load(&c->turn) != 2 * k)
				;
			double start = now_us();
			switch (w) {
			case readv_way: {
				struct iovec local = {dst, n}, remote = {block, n};
				if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)n) {
					perror("transfer: process_vm_readv");
					goto out;
				}
				break;
			}
			case pipe_way:
				for (size_t done = 0; done < n;) {
					ssize_t r = read(p[0], dst + done, n - done);
					if (r <= 0) {
						perror("transfer: read");
						goto out;
					}
					done += r;
				}
				spliced[i] = c->spliced_us;
				break;
			case shm_way:
				memcpy(dst, shared, n);
				break;
			case local_way:
				memcpy(dst, own, n);
				break;
			}
			took[w][i] = now_us() - start;
			char want = clean ? 1 : (char)k;
			if (w != local_way && dst[n - 1] != want) {
				fprintf(stderr, "transfer: %s read %d, want %d\n", names[w], dst[n - 1], want);
				goto out;
			}
		}
	}
	status = 0;
	for (int w = 0; w < ways; w++) {
		if (w == pipe_way && !pipe_ok)
			continue;
		qsort(took[w], tries, sizeof(double), by_value);
		printf("%-18s %zu B: median %7.1f us, p10 %7.1f, p90 %7.1f\n", names[w], n, took[w][tries / 2], took[w][tries / 10], took[w][tries * 9 / 10]);
	}
	if (pipe_ok) {
		qsort(spliced, tries, sizeof(double), by_value);
		printf("%-18s %zu B: median %7.1f us (the writer's, before the read)\n", "vmsplice alone", n, spliced[tries / 2]);
	}
out:
	atomic_store(&c->turn, -1);
	waitpid(pid, 0, 0);
	return status;
}
