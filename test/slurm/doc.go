// Package slurm holds the end-to-end tests of jobs under a real Slurm: the
// harness of internal/testslurm (slurmctld here, one slurmd inside each
// simulated host of internal/testhosts) runs a built hcclrun inside
// salloc and sbatch allocations, where it starts its agents with srun, and
// runs the collective check directly with srun --mpi=pmi2, where the
// runtime joins the job through PMI-2. Faults are real: a rank killed, a
// node's Slurm daemons and job processes killed, a job cancelled with
// scancel, after which no process of the job may be left on any node.
// Without root, Slurm or the harness the tests skip and say how to bring
// it up.
package slurm
