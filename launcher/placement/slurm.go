package placement

import (
	"fmt"
	"strings"
)

// ParseTasksPerNode expands Slurm's SLURM_TASKS_PER_NODE syntax, a
// comma-separated list of "N" or "N(xM)" (N tasks on each of M nodes):
// "2(x3),1" is [2 2 2 1]. Errors are *SyntaxError with Source
// "SLURM_TASKS_PER_NODE".
func ParseTasksPerNode(s string) ([]int, error) {
	var out []int
	for item := range strings.SplitSeq(s, ",") {
		tasks, reps, why := parseTaskItem(item)
		if why == "" && len(out)+reps > MaxHosts {
			why = fmt.Sprintf("expands to more than %d nodes", MaxHosts)
		}
		if why != "" {
			return nil, &SyntaxError{Source: "SLURM_TASKS_PER_NODE", Token: item, Msg: why}
		}
		for range reps {
			out = append(out, tasks)
		}
	}
	return out, nil
}

func parseTaskItem(item string) (tasks, reps int, why string) {
	num, rep, hasRep := strings.Cut(item, "(")
	tasks, why = parseCount(num, "task count")
	if why != "" {
		return 0, 0, why
	}
	if !hasRep {
		return tasks, 1, ""
	}
	inner, ok := strings.CutSuffix(rep, ")")
	if !ok || !strings.HasPrefix(inner, "x") {
		return 0, 0, `want N or N(xM)`
	}
	reps, why = parseCount(inner[1:], "repeat count")
	return tasks, reps, why
}

// FromSlurm returns the hosts of a Slurm allocation: nodelist is
// SLURM_JOB_NODELIST (hostlist syntax) and tasksPerNode is
// SLURM_TASKS_PER_NODE, which gives each node's slots. The two must describe
// the same number of nodes. The caller reads the environment.
func FromSlurm(nodelist, tasksPerNode string) ([]Host, error) {
	names, err := ExpandHostlist(nodelist)
	if err != nil {
		return nil, err
	}
	tasks, err := ParseTasksPerNode(tasksPerNode)
	if err != nil {
		return nil, err
	}
	if len(tasks) != len(names) {
		return nil, fmt.Errorf("slurm: SLURM_JOB_NODELIST %s has %d nodes but SLURM_TASKS_PER_NODE %s covers %d",
			quote(nodelist), len(names), quote(tasksPerNode), len(tasks))
	}
	var set hostSet
	for i, n := range names {
		if why := checkName(n, "host"); why != "" {
			return nil, &SyntaxError{Source: "SLURM_JOB_NODELIST", Token: nodelist, Msg: why}
		}
		if why := set.add(Host{Name: n, Slots: tasks[i]}); why != "" {
			return nil, &SyntaxError{Source: "SLURM_JOB_NODELIST", Token: nodelist, Msg: why}
		}
	}
	return set.hosts, nil
}
