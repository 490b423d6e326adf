package main

import "os"

// The process environment the CLI reads for launching, all in one place
// (plan.go reads the selector's knobs through runtime.SelectorModel).

// slurmAllocation returns the node list and tasks per node of the Slurm
// allocation hcclrun runs in (salloc, sbatch), or "" and "" outside one.
func slurmAllocation() (nodelist, tasksPerNode string) {
	return os.Getenv("SLURM_JOB_NODELIST"), os.Getenv("SLURM_TASKS_PER_NODE")
}
