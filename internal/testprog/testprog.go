// Package testprog builds the programs that tests run as real processes:
// hcclrun itself, the examples, and the rank programs of test/progs.
package testprog

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Module is the import path the packages given to Build are relative to.
const Module = "github.com/hcclrun/hcclrun"

// buildTimeout bounds one Build: a cold build cache on a busy 2-core
// machine takes a minute or two.
const buildTimeout = 5 * time.Minute

// Build builds each package, named by its path in the module
// ("cmd/hcclrun", "test/progs/rankprog"), into dir as an executable named
// after the package's last element, and returns the executables' paths in
// the order given. A package that is a module of its own (cmd/hcclrun-plot)
// is built in its directory; the others by import path, in one go build.
func Build(dir string, pkgs ...string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	out := dir + string(filepath.Separator)
	bins := make([]string, len(pkgs))
	var inModule []string
	for i, p := range pkgs {
		bins[i] = filepath.Join(dir, path.Base(p))
		own := filepath.Join(root, filepath.FromSlash(p))
		if _, err := os.Stat(filepath.Join(own, "go.mod")); err == nil {
			if err := goBuild(ctx, own, out, "."); err != nil {
				return nil, err
			}
			continue
		}
		inModule = append(inModule, path.Join(Module, p))
	}
	if len(inModule) > 0 {
		if err := goBuild(ctx, root, out, inModule...); err != nil {
			return nil, err
		}
	}
	return bins, nil
}

// moduleRoot is the directory of the main module's go.mod, as seen from the
// test's working directory.
func moduleRoot(ctx context.Context) (string, error) {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	if p := strings.TrimSpace(string(gomod)); p != "" && p != os.DevNull {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("testprog: not inside module %s", Module)
}

// goBuild runs go build -o out targets in dir.
func goBuild(ctx context.Context, dir, out string, targets ...string) error {
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", out}, targets...)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s (in %s): %v\n%s", strings.Join(targets, " "), dir, err, b)
	}
	return nil
}
