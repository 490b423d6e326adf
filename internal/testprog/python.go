package testprog

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Python returns the path of a python3 interpreter that imports module:
// the first on PATH, or Debian's /usr/bin/python3, where its python3-*
// packages install (a PATH may put another python3, pyenv's, first). The
// path is the interpreter's own, not a shim that may choose another one
// in the ranks' environment. Tests run it from their package directory,
// where a directory named like the module would import as a namespace
// package: the module must be one a package of its own provides (e.g.
// "torch.distributed").
func Python(module string) (string, error) {
	var errs []error
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		out, err := exec.Command(py, "-c", "import sys, "+module+"; print(sys.executable)").Output()
		if err == nil {
			return strings.TrimSpace(string(out)), nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

// RequirePython is Python(module) for a test: without such an
// interpreter the test skips, unless the environment variable require is
// "1" (CI sets it where it installs pkg), which makes that a failure.
func RequirePython(t testing.TB, module, require, pkg string) string {
	t.Helper()
	py, err := Python(module)
	if err == nil {
		return py
	}
	if os.Getenv(require) == "1" {
		t.Fatalf("no python3 imports %s (apt-get install %s): %v", module, pkg, err)
	}
	t.Skipf("no python3 imports %s: %v", module, err)
	return ""
}
