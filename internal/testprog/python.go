package testprog

import (
	"errors"
	"os/exec"
	"strings"
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
