package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/bench"
)

func sweep() []bench.Row {
	var rows []bench.Row
	for _, coll := range []string{"allreduce", "allgather"} {
		for b := int64(0); b <= 1<<20; b = max(8, b*4) {
			rows = append(rows, bench.Row{Coll: coll, Ranks: 2, Bytes: b, OutOfPlace: bench.Result{BusBW: float64(b) / 1e5}})
		}
	}
	return rows
}

// TestWrite draws a sweep as SVG and as PNG and checks that the files are
// what their extensions say, with the collectives' names in the SVG's
// legend.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	svg, png := filepath.Join(dir, "p.svg"), filepath.Join(dir, "p.PNG")
	for _, p := range []string{svg, png} {
		if err := write(p, "busbw, 2 ranks", sweep()); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, "<svg") || !strings.Contains(s, "allreduce") || !strings.Contains(s, "allgather") {
		t.Errorf("the SVG lacks <svg or a collective's name (%d bytes)", len(b))
	}
	if b, err = os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("the PNG does not start with the PNG signature (%v)", err)
	}
}

func TestWriteRefuses(t *testing.T) {
	dir := t.TempDir()
	if err := write(filepath.Join(dir, "p.pdf"), "t", sweep()); err == nil || !strings.Contains(err.Error(), ".svg or .png") {
		t.Errorf("a .pdf: %v", err)
	}
	only0 := []bench.Row{{Coll: "allreduce", Bytes: 0}}
	if err := write(filepath.Join(dir, "p.svg"), "t", only0); err == nil || !strings.Contains(err.Error(), "no row") {
		t.Errorf("nothing to draw: %v", err)
	}
}
