package runtime

import (
	"strings"
	"testing"
)

// TestPMIFromEnv: hcclrun's variables win; srun's PMI-2 ones make a PMI
// task; srun without a PMI plugin is an error that says what to run.
func TestPMIFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		srun bool
		err  string
		fd   int
		rank int
	}{
		{name: "hcclrun", env: map[string]string{"HCCL_RANK": "0", "PMI_FD": "5"}},
		{name: "neither", env: map[string]string{}},
		{name: "pmi2", env: map[string]string{"PMI_FD": "7", "PMI_RANK": "3", "SLURM_JOB_ID": "12"}, srun: true, fd: 7, rank: 3},
		{name: "pmi2 no rank", env: map[string]string{"PMI_FD": "7"}, srun: true, fd: 7, rank: -1},
		{name: "bad fd", env: map[string]string{"PMI_FD": "x"}, srun: true, err: "PMI_FD"},
		{name: "bad rank", env: map[string]string{"PMI_FD": "7", "PMI_RANK": "-2"}, srun: true, err: "PMI_RANK"},
		{name: "srun without pmi", env: map[string]string{"SLURM_STEP_ID": "0", "SLURM_PROCID": "1"}, srun: true, err: "--mpi=pmi2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task, srun, err := pmiFromEnv(func(k string) string { return tc.env[k] })
			if srun != tc.srun {
				t.Fatalf("srun = %v, want %v", srun, tc.srun)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if srun && (task.fd != tc.fd || task.rank != tc.rank) {
				t.Fatalf("task %+v, want fd %d rank %d", task, tc.fd, tc.rank)
			}
		})
	}
}
