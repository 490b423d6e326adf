package examples_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/internal/testprog"
)

// The examples run as users run them: built binaries started by a built
// hcclrun, as real processes.

func build(t *testing.T) (bin string) {
	t.Helper()
	bin = t.TempDir()
	if _, err := testprog.Build(bin, "cmd/hcclrun", "examples/allreduce", "examples/alltoallv", "examples/train"); err != nil {
		t.Fatal(err)
	}
	return bin
}

func hcclrun(t *testing.T, bin string, np int, prog string, args ...string) string {
	t.Helper()
	return run(t, bin, append([]string{"-np", strconv.Itoa(np), filepath.Join(bin, prog)}, args...)...)
}

func TestExamples(t *testing.T) {
	bin := build(t)

	t.Run("allreduce", func(t *testing.T) {
		for _, np := range []int{1, 3, 4} {
			out := hcclrun(t, bin, np, "allreduce")
			want := fmt.Sprintf("sum = %d", np*(np+1)/2)
			if got := strings.Count(out, want); got != np {
				t.Errorf("np %d: %d ranks print %q, want %d:\n%s", np, got, want, np, out)
			}
		}
	})

	t.Run("alltoallv", func(t *testing.T) {
		out := hcclrun(t, bin, 4, "alltoallv")
		for r := range 4 {
			for _, want := range []string{
				fmt.Sprintf("rank %d: [0 1 2 3]", r),
				fmt.Sprintf("rank %d uneven: [0 1 1 2 2 2 3 3 3 3]", r),
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		}
	})

	t.Run("train", func(t *testing.T) {
		one := trainResult(t, hcclrun(t, bin, 1, "train", "-epochs", "5"))
		four := trainResult(t, hcclrun(t, bin, 4, "train", "-epochs", "5"))
		three := trainResult(t, hcclrun(t, bin, 3, "train", "-epochs", "5"))
		if len(one) != 6 {
			t.Fatalf("one rank printed %d numbers, want 5 losses and a checksum", len(one))
		}
		for i := range one {
			for _, other := range [][]float64{four, three} {
				if len(other) != len(one) || abs(other[i]-one[i]) > 1e-5 {
					t.Fatalf("np 1 printed %v, another run %v: differ by more than 1e-5", one, other)
				}
			}
		}
		if one[4] >= one[0] {
			t.Errorf("loss did not fall: %v", one[:5])
		}
		// The graph fuses the step's two AllReduces into the one call the
		// plain run makes: the same numbers, bit for bit.
		graph := trainResult(t, hcclrun(t, bin, 3, "train", "-epochs", "5", "-graph"))
		if fmt.Sprint(graph) != fmt.Sprint(three) {
			t.Errorf("np 3 -graph printed %v, without -graph %v", graph, three)
		}
	})
}

var number = regexp.MustCompile(`(?m)^(?:epoch \d+ loss|checksum) (-?[0-9.]+)$`)

// trainResult extracts the losses and the checksum that rank 0 prints.
func trainResult(t *testing.T, out string) []float64 {
	var vals []float64
	for _, m := range number.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, v)
	}
	return vals
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
