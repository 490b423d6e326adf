package fault

import (
	"fmt"
	"os"
	"testing"

	"github.com/hcclrun/hcclrun/internal/testprog"
)

// Built by TestMain: the real hcclrun and the fault program its ranks run.
var hcclrunBin, faultProg string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fault-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins, err := testprog.Build(dir, "cmd/hcclrun", "test/progs/faultprog")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	hcclrunBin, faultProg = bins[0], bins[1]
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
