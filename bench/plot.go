package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// plotCommand draws --plot: a command of its own (cmd/hcclrun-plot, a
// module of its own), so that hcclrun does not link the plotting library
// (docs/measurements.md#the-plot-apart).
const plotCommand = "hcclrun-plot"

// checkPlotPath accepts the formats --plot writes, and checks that the
// command that draws them is there, before the sweep runs.
func checkPlotPath(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg", ".png":
	default:
		return fmt.Errorf("--plot %s: want a .svg or .png file", path)
	}
	_, err := findPlotCommand()
	return err
}

// findPlotCommand returns hcclrun-plot next to this executable (where make
// builds it), else the one on PATH.
func findPlotCommand() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), plotCommand)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(plotCommand); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("--plot draws with %s, which is neither next to this hcclrun nor on PATH: "+
		"build it with `make build` or `go install github.com/hcclrun/hcclrun/cmd/%s`", plotCommand, plotCommand)
}

// writePlot has hcclrun-plot draw rows into path, titled title; the rows
// go to it as JSON on its standard input.
func writePlot(path, title string, rows []Row) error {
	cmdPath, err := findPlotCommand()
	if err != nil {
		return err
	}
	in, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	cmd := exec.Command(cmdPath, "-title", title, "-o", path)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return fmt.Errorf("--plot %s: %s: %w", path, cmdPath, err)
		}
		return errors.New(msg)
	}
	return nil
}
