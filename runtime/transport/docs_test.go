package transport_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMeasurementAnchors: every section of docs/measurements.md that the
// comments of the transports, shm and the hand-off point to exists.
func TestMeasurementAnchors(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "measurements.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	heading := regexp.MustCompile(`(?m)^#+ (.+)$`)
	punct := regexp.MustCompile(`[^\w\- ]`)
	for _, m := range heading.FindAllStringSubmatch(string(doc), -1) {
		slug := punct.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
		anchors[strings.ReplaceAll(slug, " ", "-")] = true
	}
	files := []string{filepath.Join(root, "launcher", "handoff.go")}
	for _, dir := range []string{"runtime/transport", "runtime/transport/shmlink", "runtime/transport/tcplink", "runtime/transport/linktest", "shm", "internal/handoff"} {
		fs, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
		files = append(files, fs...)
	}
	ref := regexp.MustCompile(`measurements\.md#([a-z0-9-]+)`)
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
			n++
			if !anchors[m[1]] {
				t.Errorf("%s points to docs/measurements.md#%s, which has no such section", f, m[1])
			}
		}
	}
	if n == 0 {
		t.Error("found no pointers to docs/measurements.md")
	}
}
