/*
 * initbarrier: the startup-time probe of bench/compare. It joins the job,
 * meets every rank once and leaves, so that the wall time of
 * `mpiexec -n 2 ./initbarrier` is what an MPI launcher and library take to
 * start a job, and nothing else. bench/initbarrier is the hcclrun twin.
 */
#include <mpi.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
