// Package placement decides where the ranks of a job run: it reads the
// hosts a user offers (a hostfile, -H, a Slurm allocation, or this machine
// alone) and maps ranks onto them the way Open MPI's mpirun does.
//
// Hosts come from:
//
//   - ParseHostfile / ReadHostfile: Open MPI hostfiles ("node1 slots=4
//     max_slots=8", "user@node2", "#" comments, repeated hosts adding their
//     slots) and MPICH ones ("node1:4");
//   - ParseHostList: the -H/--host argument ("h1:2,h2:2");
//   - FromSlurm: SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE ("2(x3),1");
//   - Localhost: no hostfile and no -H, one host "localhost" with a slot
//     per CPU, as mpirun does on a workstation;
//   - Resolve: the choice among those that the CLI makes.
//
// Host names everywhere accept Slurm hostlist syntax ("node[01-04,07]",
// zero padding kept), see ExpandHostlist.
//
// Map turns hosts and options (-np, --map-by slot|node, -N, --oversubscribe)
// into a Placement: the hosts that got ranks, in order, each with a
// contiguous range of ranks. Contiguity is the rank table's rule (HCCL
// requires the ranks of a server to be contiguous), so --map-by node decides
// how many ranks each host gets, round robin as in Open MPI, and ranks are
// then numbered host by host; Open MPI would number them round robin too
// (rank 1 on the second host), which a rank table cannot express. This is
// what Open MPI itself does with "--map-by node --rank-by slot", and
// DisplayMap says so.
//
// The package does no I/O except reading a hostfile by path; everything is
// deterministic and safe for concurrent use (there is no shared state).
package placement
