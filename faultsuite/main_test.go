package faultsuite

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Built by TestMain: the real hcclrun and the fault program its ranks run.
var hcclrunBin, faultProg string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "faultsuite-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hcclrunBin = filepath.Join(dir, "hcclrun")
	faultProg = filepath.Join(dir, "faultprog")
	for _, b := range [][2]string{{hcclrunBin, "../cmd/hcclrun"}, {faultProg, "./testdata/faultprog"}} {
		cmd := exec.Command("go", "build", "-o", b[0], b[1])
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", b[1], err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
