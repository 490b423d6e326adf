package pmi2

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/testslurm"
)

// TestRealSrun runs this test binary as 6 tasks of `srun --mpi=pmi2` on the
// 3 nodes of the Slurm harness (TestTaskUnderSrun is each task's part):
// every task learns its rank and the job's layout from slurmstepd, puts a
// value, fences, and reads every other task's.
func TestRealSrun(t *testing.T) {
	e := testslurm.Require(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := e.Cmd(ctx, "srun", "--mpi=pmi2", "-N", "3", "-n", "6", "--kill-on-bad-exit=1", self, "-test.run=^TestTaskUnderSrun$", "-test.v")
	cmd.Env = append(cmd.Env, "HCCL_PMI2_TEST_TASK=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("srun: %v\n%s", err, out)
	}
	for rank := range 6 {
		want := fmt.Sprintf("task %d/6 node %d local %d/2 ok", rank, rank/2, rank%2)
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

func TestTaskUnderSrun(t *testing.T) {
	if os.Getenv("HCCL_PMI2_TEST_TASK") != "1" {
		t.Skip("a task of TestRealSrun")
	}
	fd, err := strconv.Atoi(os.Getenv("PMI_FD"))
	if err != nil {
		t.Fatalf("PMI_FD=%q", os.Getenv("PMI_FD"))
	}
	rank, _ := strconv.Atoi(os.Getenv("PMI_RANK"))
	c, err := Connect(os.NewFile(uintptr(fd), "pmi"), rank, os.Getenv("PMI_JOBID"))
	if err != nil {
		t.Fatal(err)
	}
	m, ok, err := c.JobAttr("PMI_process_mapping")
	if err != nil || !ok {
		t.Fatalf("PMI_process_mapping: %v %v", ok, err)
	}
	nodes, err := ProcessMapping(m, c.Size())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put(fmt.Sprintf("k%d", c.Rank()), fmt.Sprintf("from-%d", c.Rank())); err != nil {
		t.Fatal(err)
	}
	if err := c.Fence(); err != nil {
		t.Fatal(err)
	}
	for peer := range c.Size() {
		v, ok, err := c.Get(fmt.Sprintf("k%d", peer))
		if err != nil || !ok || v != fmt.Sprintf("from-%d", peer) {
			t.Fatalf("get k%d: %q %v %v", peer, v, ok, err)
		}
	}
	if err := c.Finalize(); err != nil {
		t.Fatal(err)
	}
	lr, ls := Local(nodes, c.Rank())
	fmt.Printf("task %d/%d node %d local %d/%d ok\n", c.Rank(), c.Size(), nodes[c.Rank()], lr, ls)
}
