package main

import (
	"os"
	"strconv"
)

// The process environment the CLI reads for launching, all in one place
// (plan.go hands os.Getenv to selector.FromEnv for the knobs it prices).

// slurmAllocation returns the node list and tasks per node of the Slurm
// allocation hcclrun runs in (salloc, sbatch), or "" and "" outside one.
func slurmAllocation() (nodelist, tasksPerNode string) {
	return os.Getenv("SLURM_JOB_NODELIST"), os.Getenv("SLURM_TASKS_PER_NODE")
}

// slurmJob reports whether hcclrun runs inside a Slurm allocation (salloc,
// sbatch: its nodes and their tasks are set), and the task count it asked
// for (SLURM_NTASKS, 0 when unset), -np's default there.
func slurmJob() (inside bool, ntasks int) {
	inside = os.Getenv("SLURM_JOB_NODELIST") != "" && os.Getenv("SLURM_TASKS_PER_NODE") != ""
	ntasks, _ = strconv.Atoi(os.Getenv("SLURM_NTASKS"))
	return inside, ntasks
}

// slurmNodeName is the Slurm name of the node an agent runs on, which
// slurmd gives every task.
func slurmNodeName() string {
	if n := os.Getenv("SLURMD_NODENAME"); n != "" {
		return n
	}
	h, _ := os.Hostname()
	return h
}
