// pingpong: how long a cache line takes to go from one core to another and
// back, between two processes through a shared mapping, as the runtime's
// shared-memory links move their small frames. bench/compare runs it
// before each measured command and reports it beside the ratio tables: on
// the project's VMs it reads 60-200 ns a round trip in some minutes and
// 470-830 ns in others (the two vCPUs placed far apart), and the transfers
// of every implementation slow down with it.
//
//   cc -O2 -o pingpong pingpong.c && ./pingpong [round trips]
//
// Prints the mean round trip in ns, alone on its line.
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 200000;
	volatile long *m = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || n <= 0) {
		perror("pingpong");
		return 1;
	}
	volatile long *ping = m, *pong = m + 16; // two cache lines apart
	*ping = 0;
	*pong = 0;
	pid_t child = fork();
	if (child < 0) {
		perror("pingpong: fork");
		return 1;
	}
	// The first round trips wait for the child to start and fault its
	// pages in: warm up before the clock starts.
	const long warm = 20000;
	if (child == 0) {
		for (long i = 1; i <= warm + n; i++) {
			while (*ping != i)
				;
			*pong = i;
		}
		_exit(0);
	}
	struct timespec t0, t1;
	for (long i = 1; i <= warm + n; i++) {
		if (i == warm + 1)
			clock_gettime(CLOCK_MONOTONIC, &t0);
		*ping = i;
		while (*pong != i)
			;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	waitpid(child, 0, 0);
	printf("%.0f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n);
	return 0;
}
