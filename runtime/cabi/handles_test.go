//go:build cgo

package main

import (
	"errors"
	"strings"
	"testing"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestTable: a handle is live until removed, then destroyed for good;
// NULL and made-up handles are errors of their own; no handle is given
// twice, across tables.
func TestTable(t *testing.T) {
	a := table[int]{kind: "graph", maker: "hcclGraphCreate"}
	b := table[int]{kind: "exec", maker: "hcclGraphCompile"}
	one, two := 1, 2
	ha, hb := a.add(&one), b.add(&two)
	if ha == 0 || hb == 0 || ha == hb {
		t.Fatalf("handles %d and %d: want two distinct non-zero ones", ha, hb)
	}
	if v, err := a.get(ha); err != nil || *v != 1 {
		t.Fatalf("get(%d) = %v, %v", ha, v, err)
	}
	if _, err := a.remove(ha); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tab  *table[int]
		h    uint64
		is   error
		text string
	}{
		{"null", &a, 0, hccl.ErrInvalidArgument, "graph is NULL"},
		{"destroyed", &a, ha, hccl.ErrClosed, "graph was destroyed"},
		{"other kind", &a, hb, hccl.ErrInvalidArgument, "is not one hcclGraphCreate made"},
		{"made up", &b, 0xdeadbeef, hccl.ErrInvalidArgument, "exec 0xdeadbeef is not one hcclGraphCompile made"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.tab.get(tc.h)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("get(%#x) = %v, want %v with %q", tc.h, err, tc.is, tc.text)
			}
		})
	}
	if _, err := a.remove(ha); !errors.Is(err, hccl.ErrClosed) {
		t.Fatalf("second remove: %v, want ErrClosed", err)
	}
}
