package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/launcher"
)

func TestHostFlags(t *testing.T) {
	dir := t.TempDir()
	ompi := filepath.Join(dir, "ompi")
	os.WriteFile(ompi, []byte("# comment\nnode[1-2] slots=2\n\nalice@node3 slots=1 max_slots=2\n"), 0o644)
	mpich := filepath.Join(dir, "mpich")
	os.WriteFile(mpich, []byte("a:3\nb:1\n"), 0o644)
	type node struct {
		name  string
		ranks int
		user  string
	}
	tests := []struct {
		name string
		args []string
		want []node
	}{
		{"hostfile fills slots", []string{"--hostfile", ompi, "p"}, []node{{"node1", 2, ""}, {"node2", 2, ""}, {"alice@node3", 1, ""}}},
		{"machinefile alias, np", []string{"--machinefile", ompi, "-np", "3", "p"}, []node{{"node1", 2, ""}, {"node2", 1, ""}}},
		{"mpich format", []string{"--hostfile", mpich, "p"}, []node{{"a", 3, ""}, {"b", 1, ""}}},
		{"-H with hostlist", []string{"-H", "h[1-3]:2", "p"}, []node{{"h1", 2, ""}, {"h2", 2, ""}, {"h3", 2, ""}}},
		{"-H repeated", []string{"-H", "h1:1", "-H", "h2:1", "p"}, []node{{"h1", 1, ""}, {"h2", 1, ""}}},
		{"map-by node", []string{"-H", "a:2,b:2", "--map-by", "node", "-np", "3", "p"}, []node{{"a", 2, ""}, {"b", 1, ""}}},
		{"-N", []string{"-H", "a:4,b:4", "-N", "1", "p"}, []node{{"a", 1, ""}, {"b", 1, ""}}},
		{"oversubscribe", []string{"-H", "a,b", "-np", "5", "--oversubscribe", "p"}, []node{{"a", 3, ""}, {"b", 2, ""}}},
		{"-H selects from the hostfile", []string{"--hostfile", ompi, "-H", "node2,node3", "p"}, []node{{"node2", 2, ""}, {"alice@node3", 1, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, out, err := parse(t, tt.args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if job.Placement == nil || job.NP != 0 || job.Hosts != nil {
				t.Fatalf("placement %v np %d hosts %v", job.Placement, job.NP, job.Hosts)
			}
			var got []node
			for _, n := range job.Placement.Nodes {
				name := n.Host.Name
				if n.Host.User != "" {
					name = n.Host.User + "@" + name
				}
				got = append(got, node{name, n.Ranks, ""})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestSSHFlags(t *testing.T) {
	job, out, err := parse(t, "-H", "h1", "--ssh-identity", "/k", "--ssh-user", "u", "--ssh-port", "2222",
		"--ssh-config", "/c", "--ssh-known-hosts", "/kh", "--ssh-accept-new", "--prefix", "/opt/hccl", "p")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	o := job.Remote.SSH
	if o.Identity != "/k" || o.User != "u" || o.Port != 2222 || o.ConfigFile != "/c" || o.KnownHostsFile != "/kh" || !o.AcceptNew {
		t.Fatalf("ssh options %+v", o)
	}
	if job.Remote.AgentPath != "/opt/hccl/bin/hcclrun" {
		t.Fatalf("agent path %q", job.Remote.AgentPath)
	}
	// Without hosts the job stays local, as before; -N gives -np.
	job, _, err = parse(t, "-N", "3", "p")
	if err != nil || job.Placement != nil || job.NP != 3 {
		t.Fatalf("local -N: %v %+v", err, job)
	}
}

func TestAgentPath(t *testing.T) {
	tests := []struct{ prefix, argv0, want string }{
		{"", "/usr/local/bin/hcclrun", "/usr/local/bin/hcclrun"},
		{"", "hcclrun", "hcclrun"},
		{"", "./bin/hcclrun", "hcclrun"},
		{"/opt/h", "/usr/bin/hcclrun", "/opt/h/bin/hcclrun"},
	}
	for _, tt := range tests {
		if got := agentPath(tt.prefix, tt.argv0); got != tt.want {
			t.Errorf("agentPath(%q, %q) = %q, want %q", tt.prefix, tt.argv0, got, tt.want)
		}
	}
}

func TestHostFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"bad map-by", []string{"-H", "a", "--map-by", "core", "p"}, `--map-by "core": want slot or node`},
		{"not enough slots", []string{"-H", "a:1,b:1", "-np", "3", "p"}, "use --oversubscribe"},
		{"-N and map-by node", []string{"-H", "a,b", "-N", "1", "--map-by", "node", "p"}, "conflicts with --map-by node"},
		{"missing hostfile", []string{"--hostfile", "/nonexistent/hf", "p"}, "/nonexistent/hf"},
		{"bad hostlist", []string{"-H", "node[3-1]", "p"}, "node[3-1]"},
		{"empty hostfile", []string{"--hostfile", "/dev/null", "p"}, "/dev/null: no hosts"},
		{"-H host not in hostfile", []string{"--hostfile", "HF", "-H", "x", "p"}, "-H host x is not in hostfile"},
	}
	hf := filepath.Join(t.TempDir(), "hf")
	os.WriteFile(hf, []byte("a slots=2\n"), 0o644)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, a := range tt.args {
				if a == "HF" {
					tt.args[i] = hf
				}
			}
			job, _, err := parse(t, tt.args...)
			if err == nil || job != nil {
				t.Fatalf("no error, job %+v", job)
			}
			if !strings.Contains(err.Error(), tt.msg) || launcher.ExitCode(err) != 2 {
				t.Fatalf("%v (exit %d), want %q and exit 2", err, launcher.ExitCode(err), tt.msg)
			}
		})
	}
}

// --display-map prints the placement and launches nothing, exit 0.
func TestDisplayMap(t *testing.T) {
	var out, errb strings.Builder
	code := run(t.Context(), []string{"hcclrun", "--display-map", "-H", "h[1-3]:2", "-np", "5", "prog"}, stdio{strings.NewReader(""), &out, &errb})
	if code != 0 || errb.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	for _, w := range []string{"5 ranks on 3 hosts", "Data for node: h3\tNum slots: 2\tMax slots: none\tNum procs: 1", "Process rank: 4\tLocal rank: 0"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("map lacks %q:\n%s", w, out.String())
		}
	}
	out.Reset()
	if code := run(t.Context(), []string{"hcclrun", "--display-map", "-np", "3", "prog"}, stdio{strings.NewReader(""), &out, &errb}); code != 0 || !strings.Contains(out.String(), "Data for node: localhost") {
		t.Fatalf("local map: exit %d\n%s", code, out.String())
	}
}

// Inside a Slurm allocation without --hostfile or -H, its nodes are the
// hosts, with SLURM_TASKS_PER_NODE as their slots.
func TestSlurmAllocation(t *testing.T) {
	t.Setenv("SLURM_JOB_NODELIST", "h[1-3]")
	t.Setenv("SLURM_TASKS_PER_NODE", "2(x2),1")
	job, out, err := parse(t, "p")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got []string
	for _, n := range job.Placement.Nodes {
		got = append(got, fmt.Sprintf("%s:%d", n.Host.Name, n.Ranks))
	}
	if strings.Join(got, ",") != "h1:2,h2:2,h3:1" {
		t.Fatalf("placement %v", got)
	}
	if job.Remote.Slurm == nil {
		t.Fatal("inside an allocation the agents are not started with srun")
	}
	// -H wins over the allocation, and is reached over SSH.
	if job, _, err = parse(t, "-H", "x:1", "p"); err != nil || len(job.Placement.Nodes) != 1 || job.Placement.Nodes[0].Host.Name != "x" || job.Remote.Slurm != nil {
		t.Fatalf("-H in an allocation: %v %+v", err, job)
	}
	if job, _, err = parse(t, "--launcher", "ssh", "p"); err != nil || job.Placement.Size() != 5 || job.Remote.Slurm != nil {
		t.Fatalf("--launcher ssh in an allocation: %v %+v", err, job)
	}
	if job, _, err = parse(t, "--launcher", "local", "-np", "3", "p"); err != nil || job.Placement != nil || job.NP != 3 {
		t.Fatalf("--launcher local in an allocation: %v %+v", err, job)
	}
	if _, _, err = parse(t, "--launcher", "pbs", "p"); err == nil || !strings.Contains(err.Error(), "want slurm, ssh or local") {
		t.Fatalf("--launcher pbs: %v", err)
	}
	// -np defaults to the allocation's task count.
	t.Setenv("SLURM_NTASKS", "4")
	if job, _, err = parse(t, "p"); err != nil || job.Placement.Size() != 4 {
		t.Fatalf("SLURM_NTASKS=4: %v %+v", err, job)
	}
	t.Setenv("SLURM_NTASKS", "")
	t.Setenv("SLURM_TASKS_PER_NODE", "2")
	if _, _, err := parse(t, "p"); err == nil || !strings.Contains(err.Error(), "slurm allocation") {
		t.Fatalf("inconsistent allocation: %v", err)
	}
	t.Setenv("SLURM_JOB_NODELIST", "")
	if _, _, err := parse(t, "--launcher", "slurm", "p"); err == nil || !strings.Contains(err.Error(), "not inside a Slurm allocation") {
		t.Fatalf("--launcher slurm outside an allocation: %v", err)
	}
}
