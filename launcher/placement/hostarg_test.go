package placement

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestParseHostList(t *testing.T) {
	tests := []struct {
		in   string
		want []Host
		err  string
	}{
		{in: "h1:2,h2:2", want: []Host{{Name: "h1", Slots: 2}, {Name: "h2", Slots: 2}}},
		{in: "a,a,b", want: []Host{{Name: "a", Slots: 2}, {Name: "b", Slots: 1}}},
		{in: "node[1-3,5]:2,x", want: []Host{{Name: "node1", Slots: 2}, {Name: "node2", Slots: 2},
			{Name: "node3", Slots: 2}, {Name: "node5", Slots: 2}, {Name: "x", Slots: 1}}},
		{in: "joe@n[01-02]:4", want: []Host{{Name: "n01", User: "joe", Slots: 4}, {Name: "n02", User: "joe", Slots: 4}}},
		{in: "fd00::1,10.0.0.1:3", want: []Host{{Name: "fd00::1", Slots: 1}, {Name: "10.0.0.1", Slots: 3}}},
		{in: " a , b ", want: []Host{{Name: "a", Slots: 1}, {Name: "b", Slots: 1}}},

		{in: "", err: `-H: empty host list`},
		{in: "a,,b", err: "empty host entry"},
		{in: "a:x", err: `-H: "a:x": slot count "x" is not a decimal number`},
		{in: "a:0", err: "at least 1"},
		{in: "a:", err: `-H: "a:": slot count is empty`},
		{in: "n[1-2", err: `unclosed "["`},
		{in: "x@a,y@a", err: `-H: "y@a": host a was given before with user "x"`},
		{in: "-oProxyCommand=id", err: `starts with "-"`},
		{in: "a:1:2", err: `host name "a:1:2" has a colon`},
		{in: "fe80::1%eth0,::1", want: []Host{{Name: "fe80::1%eth0", Slots: 1}, {Name: "::1", Slots: 1}}},
		{in: "a b", err: `has the character ' '`},
	}
	for _, tt := range tests {
		got, err := ParseHostList(tt.in)
		if tt.err == "" {
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseHostList(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) || se.Source != "-H" || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("ParseHostList(%q) error = %v, want a -H SyntaxError containing %q", tt.in, err, tt.err)
		}
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	hf := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hf, []byte("a slots=4 max_slots=6\njoe@b slots=2\nc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file, list string
		want             []Host
		err              string
	}{
		{"nothing", "", "", Localhost(), ""},
		{"file", hf, "", []Host{{Name: "a", Slots: 4, MaxSlots: 6}, {Name: "b", User: "joe", Slots: 2}, {Name: "c", Slots: 1}}, ""},
		{"list", "", "x:3", []Host{{Name: "x", Slots: 3}}, ""},
		{"filter keeps file slots", hf, "c,b", []Host{{Name: "c", Slots: 1}, {Name: "b", User: "joe", Slots: 2}}, ""},
		{"filter with count", hf, "a:5", []Host{{Name: "a", Slots: 5, MaxSlots: 6}}, ""},
		{"filter over max", hf, "a:7", nil, "has 7 slots, more than its max_slots=6"},
		{"not in file", hf, "a,z", nil, "-H host z is not in hostfile " + hf},
		{"user clash", hf, "ann@b", nil, `-H gives host b user "ann"`},
		{"missing file", filepath.Join(dir, "nope"), "", nil, "no such file"},
		{"bad list", hf, "a:x", nil, "-H"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(tt.file, tt.list)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestLocalhost(t *testing.T) {
	h := Localhost()
	if len(h) != 1 || h[0].Name != "localhost" || h[0].Slots != runtime.NumCPU() || h[0].MaxSlots != 0 {
		t.Fatalf("Localhost() = %+v, want localhost with %d slots", h, runtime.NumCPU())
	}
}
