package testprog

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CLib is libhccl.so and hccl.h as a test built them.
type CLib struct {
	Lib     string // the directory of libhccl.so
	Include string // the directory of hccl.h
}

// BuildCLib builds libhccl.so (go build -buildmode=c-shared ./runtime/cabi)
// into dir/lib, copies hccl.h into dir/include and writes
// dir/lib/pkgconfig/hccl.pc for prefix dir, as make lib does.
func BuildCLib(dir string) (*CLib, error) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	l := &CLib{Lib: filepath.Join(dir, "lib"), Include: filepath.Join(dir, "include")}
	for _, d := range []string{l.Lib, l.Include} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-buildmode=c-shared", "-o", filepath.Join(l.Lib, "libhccl.so"), "./runtime/cabi")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build -buildmode=c-shared ./runtime/cabi: %v\n%s", err, b)
	}
	os.Remove(filepath.Join(l.Lib, "libhccl.h")) // cgo's own header; hccl.h is the interface
	h, err := os.ReadFile(filepath.Join(root, "runtime", "cabi", "hccl.h"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(l.Include, "hccl.h"), h, 0o644); err != nil {
		return nil, err
	}
	pc, err := os.ReadFile(filepath.Join(root, "runtime", "cabi", "hccl.pc.in"))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(l.Lib, "pkgconfig"), 0o755); err != nil {
		return nil, err
	}
	pc = []byte(strings.ReplaceAll(string(pc), "@PREFIX@", dir))
	return l, os.WriteFile(filepath.Join(l.Lib, "pkgconfig", "hccl.pc"), pc, 0o644)
}

// Compile compiles the C program src (relative to the module's root) with
// cc into out, with the flags pkg-config gives for hccl.pc, as the README
// says to; they put the library's directory in the program's run path, so
// that it runs without LD_LIBRARY_PATH. Include directories (relative to
// the module's root) come before the library's.
func (l *CLib) Compile(src, out string, include ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	pkg := exec.CommandContext(ctx, "pkg-config", "--cflags", "--libs", "hccl")
	pkg.Env = append(os.Environ(), "PKG_CONFIG_PATH="+filepath.Join(l.Lib, "pkgconfig"))
	flags, err := pkg.Output()
	if err != nil {
		return fmt.Errorf("pkg-config --cflags --libs hccl (apt-get install pkg-config): %v", err)
	}
	args := []string{"-O2", "-Wall", "-Wextra", "-Werror"}
	for _, dir := range include {
		args = append(args, "-I"+filepath.Join(root, filepath.FromSlash(dir)))
	}
	args = append(append(args, filepath.Join(root, filepath.FromSlash(src)), "-o", out), strings.Fields(string(flags))...)
	if b, err := exec.CommandContext(ctx, "cc", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("cc %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}
