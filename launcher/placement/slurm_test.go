package placement

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseTasksPerNode(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{in: "2(x3),1", want: []int{2, 2, 2, 1}},
		{in: "4", want: []int{4}},
		{in: "1,2,3", want: []int{1, 2, 3}},
		{in: "16(x1)", want: []int{16}},
		{in: "", err: "task count is empty"},
		{in: "2(x3", err: "want N or N(xM)"},
		{in: "2(3)", err: "want N or N(xM)"},
		{in: "2(x0)", err: "repeat count must be at least 1"},
		{in: "0", err: "task count must be at least 1"},
		{in: "a", err: `SLURM_TASKS_PER_NODE: "a": task count "a" is not a decimal number`},
		{in: "1(x70000)", err: "more than 65536 nodes"},
	}
	for _, tt := range tests {
		got, err := ParseTasksPerNode(tt.in)
		if tt.err == "" {
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("ParseTasksPerNode(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		} else if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("ParseTasksPerNode(%q) error = %v, want %q", tt.in, err, tt.err)
		}
	}
}

func TestFromSlurm(t *testing.T) {
	got, err := FromSlurm("node[01-03],gpu7", "2(x3),1")
	want := []Host{{Name: "node01", Slots: 2}, {Name: "node02", Slots: 2}, {Name: "node03", Slots: 2}, {Name: "gpu7", Slots: 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("FromSlurm = %+v, %v; want %+v", got, err, want)
	}
	for _, tt := range []struct{ nodes, tasks, err string }{
		{"node[1-3]", "2(x2)", "has 3 nodes but SLURM_TASKS_PER_NODE \"2(x2)\" covers 2"},
		{"node[1-", "1", "unclosed"},
		{"n1", "x", "task count"},
		{"n/1", "1", "character '/'"},
	} {
		if _, err := FromSlurm(tt.nodes, tt.tasks); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("FromSlurm(%q, %q) error = %v, want %q", tt.nodes, tt.tasks, err, tt.err)
		}
	}
}
