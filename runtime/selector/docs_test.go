package selector

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocAnchors: every section of docs/selector.md that default.tuning
// points to in its short form, (#anchor), exists. The full
// docs/<page>.md#<anchor> pointers of every Go file are bench's
// TestDocLinks.
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
	b, err := os.ReadFile("default.tuning")
	if err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(`\(#([a-z0-9-]+)\)`)
	n := 0
	for _, m := range ref.FindAllStringSubmatch(string(b), -1) {
		if m[1] == "name" {
			continue // the header's example
		}
		n++
		if !anchors[m[1]] {
			t.Errorf("default.tuning points to docs/selector.md#%s, which has no such section", m[1])
		}
	}
	if n == 0 {
		t.Error("found no pointers to docs/selector.md")
	}
}
