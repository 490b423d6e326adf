package main

import "os"

// The process environment the CLI reads for launching, all in one place
// (plan.go hands os.Getenv to selector.FromEnv for the knobs it prices).

// slurmAllocation returns the node list and tasks per node of the Slurm
// allocation hcclrun runs in (salloc, sbatch), or "" and "" outside one.
func slurmAllocation() (nodelist, tasksPerNode string) {
	return os.Getenv("SLURM_JOB_NODELIST"), os.Getenv("SLURM_TASKS_PER_NODE")
}
