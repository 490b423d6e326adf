package selector

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocAnchors: every section of docs/selector.md that this package's
// comments, default.tuning and the runtime's select.go point to exists.
func TestDocAnchors(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "selector.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	heading := regexp.MustCompile(`(?m)^#+ (.+)$`)
	for _, m := range heading.FindAllStringSubmatch(string(doc), -1) {
		slug := strings.ToLower(strings.TrimSpace(m[1]))
		slug = regexp.MustCompile(`[^\w\- ]`).ReplaceAllString(slug, "")
		anchors[strings.ReplaceAll(slug, " ", "-")] = true
	}
	files, _ := filepath.Glob("*.go")
	files = append(files, "default.tuning", filepath.Join("..", "select.go"))
	ref := regexp.MustCompile(`selector\.md#([a-z0-9-]+)|\(#([a-z0-9-]+)\)`)
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
			a := m[1] + m[2]
			if a == "name" && f == "default.tuning" {
				continue // the header's example
			}
			n++
			if !anchors[a] {
				t.Errorf("%s points to docs/selector.md#%s, which has no such section", f, a)
			}
		}
	}
	if n == 0 {
		t.Error("found no pointers to docs/selector.md")
	}
}
