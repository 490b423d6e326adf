package placement

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzParseHostfile checks that the hostfile parser never panics and that
// what it accepts is sane: unique valid names, slot counts within limits,
// a hostfile written back from the result parses to the same hosts, and
// Map can place one rank per slot. Seeds: testdata/fuzz/FuzzParseHostfile.
func FuzzParseHostfile(f *testing.F) {
	f.Add([]byte("a slots=2 max_slots=4\nu@b:3\n# c\nn[01-02]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		hs, err := ParseHostfile("fuzz", data)
		if err != nil {
			return
		}
		if len(hs) == 0 {
			t.Fatal("success without hosts")
		}
		seen := map[string]bool{}
		var b strings.Builder
		for _, h := range hs {
			if seen[h.Name] {
				t.Fatalf("host %q twice in %+v", h.Name, hs)
			}
			seen[h.Name] = true
			if why := checkName(h.Name, "host"); why != "" {
				t.Fatalf("accepted bad name: %s", why)
			}
			if h.Slots < 1 || h.Slots > maxCount || h.MaxSlots < 0 || (h.MaxSlots != 0 && h.MaxSlots < h.Slots) {
				t.Fatalf("bad counts %+v", h)
			}
			if h.User != "" {
				b.WriteString(h.User + "@")
			}
			fmt.Fprintf(&b, "%s slots=%d", h.Name, h.Slots)
			if h.MaxSlots != 0 {
				fmt.Fprintf(&b, " max_slots=%d", h.MaxSlots)
			}
			b.WriteByte('\n')
		}
		again, err := ParseHostfile("rewritten", []byte(b.String()))
		if err != nil || !reflect.DeepEqual(again, hs) {
			t.Fatalf("rewritten hostfile:\n%s\nparses to %+v, %v; want %+v", b.String(), again, err, hs)
		}
		p, err := Map(hs, Options{})
		if err != nil {
			t.Fatalf("Map of parsed hosts: %v", err)
		}
		total := 0
		for _, h := range hs {
			total += h.Slots
		}
		if p.Size() != total || len(p.Nodes) != len(hs) {
			t.Fatalf("Map placed %d ranks on %d nodes, want %d on %d", p.Size(), len(p.Nodes), total, len(hs))
		}
	})
}

// FuzzExpandHostlist checks that the expander never panics, stays within
// MaxHosts, yields names free of hostlist syntax, and leaves a bracket-free
// list as a plain comma split. Seeds: testdata/fuzz/FuzzExpandHostlist.
func FuzzExpandHostlist(f *testing.F) {
	f.Add("node[01-04,07],a[1-2]b")
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ExpandHostlist(s)
		if err != nil {
			return
		}
		if len(hosts) == 0 || len(hosts) > MaxHosts {
			t.Fatalf("%d hosts from %q", len(hosts), s)
		}
		for _, h := range hosts {
			if h == "" || strings.ContainsAny(h, "[],") {
				t.Fatalf("host %q from %q", h, s)
			}
		}
		if !strings.ContainsAny(s, "[]") && !slices.Equal(hosts, strings.Split(s, ",")) {
			t.Fatalf("%q expands to %q", s, hosts)
		}
	})
}

// FuzzParseHostList checks the -H parser the same way.
// Seeds: testdata/fuzz/FuzzParseHostList.
func FuzzParseHostList(f *testing.F) {
	f.Add("h1:2,h2:2,u@n[1-3]:4")
	f.Fuzz(func(t *testing.T, s string) {
		hs, err := ParseHostList(s)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, h := range hs {
			if seen[h.Name] || checkName(h.Name, "host") != "" || h.Slots < 1 || h.Slots > maxCount {
				t.Fatalf("bad host %+v from %q", h, s)
			}
			seen[h.Name] = true
		}
		if _, err := Map(hs, Options{}); err != nil {
			t.Fatalf("Map of %+v: %v", hs, err)
		}
	})
}
