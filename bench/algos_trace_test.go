package bench

import (
	"slices"
	"testing"
)

// TestParseAlgosTrace: NAME+trace is NAME for validation, kept whole as
// the row's name; an unknown algorithm is refused with or without it.
func TestParseAlgosTrace(t *testing.T) {
	colls := []Coll{AllReduce}
	got, err := ParseAlgos("auto,auto+trace,ring+trace", colls)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"auto", "auto+trace", "ring+trace"}) || !tracing(got) || tracing(got[:1]) {
		t.Fatalf("got %q", got)
	}
	if s := algoSpec(AllReduce, "ring+trace"); s != algoSpec(AllReduce, "ring") {
		t.Errorf("ring+trace forces %q, ring %q", s, algoSpec(AllReduce, "ring"))
	}
	if _, err := ParseAlgos("nosuch+trace", colls); err == nil {
		t.Error("nosuch+trace accepted")
	}
}
