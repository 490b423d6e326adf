package placement

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string // substring of the error; "" = success
	}{
		{in: "node1", want: []string{"node1"}},
		{in: "a,b,a", want: []string{"a", "b", "a"}},
		{in: "node[01-04,07]", want: []string{"node01", "node02", "node03", "node04", "node07"}},
		{in: "a[1-2]b,c", want: []string{"a1b", "a2b", "c"}},
		{in: "r[1-2]n[1-2]", want: []string{"r1n1", "r1n2", "r2n1", "r2n2"}},
		{in: "n[8-10]", want: []string{"n8", "n9", "n10"}},
		{in: "n[098-101]", want: []string{"n098", "n099", "n100", "n101"}},
		{in: "n[0-1]", want: []string{"n0", "n1"}},
		{in: "[1-2]", want: []string{"1", "2"}},
		{in: "n[3]", want: []string{"n3"}},
		{in: "x[1,3],y[2-3]z", want: []string{"x1", "x3", "y2z", "y3z"}},
		{in: "10.0.0.[1-3]", want: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}},

		{in: "", err: "empty host name"},
		{in: "a,,b", err: "empty host name"},
		{in: "n[1-", err: `unclosed "["`},
		{in: "n1]", err: `"]" without "["`},
		{in: "n[[1]]", err: `nested "["`},
		{in: "n[]", err: `empty "[]"`},
		{in: "n[3-1]", err: `range "3-1" is decreasing`},
		{in: "n[a-b]", err: `"a" is not a number`},
		{in: "n[1-2-3]", err: `"2-3" is not a number`},
		{in: "n[-2]", err: `range "-2" has an empty bound`},
		{in: "n[1,]", err: `range "" has an empty bound`},
		{in: "n[1-1234567890]", err: "more than 9 digits"},
		{in: "n[0-99999]", err: "more than 65536 hosts"},
		{in: "a[0-999]b[0-999]", err: "more than 65536 hosts"},
	}
	for _, tt := range tests {
		got, err := ExpandHostlist(tt.in)
		if tt.err == "" {
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("ExpandHostlist(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("ExpandHostlist(%q) error = %v, want a SyntaxError containing %q", tt.in, err, tt.err)
		}
	}
}
