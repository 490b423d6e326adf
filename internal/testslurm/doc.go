// Package testslurm is the Slurm side of the multi-host test harness:
// slurm.sh runs slurmctld and munged on this machine and one slurmd inside
// each simulated host of package testhosts, and Require finds it from a
// test. Tests that use it drive the real Slurm commands (srun, salloc,
// sbatch, scancel) with the SLURM_CONF the harness writes.
package testslurm
