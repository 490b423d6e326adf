package main

import (
	"strings"
	"testing"
	"time"
)

func TestTopoCommand(t *testing.T) {
	r := hcclrun(t, 60*time.Second, "", "topo", "-np", "3")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"3 ranks on 1 server", "r0 X   shm shm", "r2 shm shm X", "NIC", "lo"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("topo output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = hcclrun(t, 60*time.Second, "", "topo", "-np", "2", "-x", "HCCL_SHM_DISABLE=1")
	if r.code != 0 || !strings.Contains(r.stdout, "r0 X   tcp") {
		t.Errorf("with HCCL_SHM_DISABLE=1 (exit %d) the links are not tcp:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestPlanCommand(t *testing.T) {
	r := hcclrun(t, 30*time.Second, "", "plan", "--np", "64", "--servers", "8", "--op", "allreduce", "--bytes", "1M")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"AllReduce of 1 MiB on 64 ranks, 8 servers", "* ", "ring", "rhd", "hier", "mesh runs within one server"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = hcclrun(t, 30*time.Second, "", "plan", "--np", "65536", "--servers", "8192", "--op", "allgather", "--bytes", "64M")
	if r.code != 0 || !strings.Contains(r.stdout, "65536 ranks") {
		t.Errorf("65536 ranks: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = hcclrun(t, 30*time.Second, "", "plan", "--np", "4", "--op", "allreduce", "--bytes", "64", "--algo", "ring", "--rank", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "AllReduce/ring rank 1 of 4") || !strings.Contains(r.stdout, "step 5:") {
		t.Errorf("--rank: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = hcclrun(t, 30*time.Second, "", "plan", "--np", "4", "--op", "allreduce", "--algo", "pat")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "pat") {
		t.Errorf("a forced algorithm that cannot serve the call was not refused: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = hcclrun(t, 30*time.Second, "", "plan", "--op", "nonsense")
	if r.code != 2 {
		t.Errorf("bad --op: exit %d, want 2\n%s", r.code, r.stderr)
	}
}
