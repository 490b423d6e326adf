package bench

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocLinks holds the pointers into docs/ to the sections they name:
// every docs/<page>.md#<anchor> in the module's Go files and every
// [text](<page>.md#<anchor>) or (#<anchor>) link between the pages of docs/
// must name a heading of that page. Comments state a decision and link to
// the measurements behind it (docs/measurements.md); a section renamed or
// moved to docs/history/ must take its pointers along.
func TestDocLinks(t *testing.T) {
	root := filepath.Join("..")
	anchors := map[string]map[string]bool{} // page, relative to root -> its anchors
	heading := regexp.MustCompile(`(?m)^#+ (.+)$`)
	strip := regexp.MustCompile(`[^\w\- ]`)
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		a := map[string]bool{}
		if b, err := os.ReadFile(filepath.Join(root, page)); err == nil {
			for _, m := range heading.FindAllStringSubmatch(string(b), -1) {
				slug := strip.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
				a[strings.ReplaceAll(slug, " ", "-")] = true
			}
		} else {
			a = nil
		}
		anchors[page] = a
		return a
	}
	check := func(from, page, anchor string) {
		a := anchorsOf(page)
		switch {
		case a == nil:
			t.Errorf("%s points to %s#%s: no such page", from, page, anchor)
		case !a[anchor]:
			t.Errorf("%s points to %s#%s: the page has no such section", from, page, anchor)
		}
	}
	goRef := regexp.MustCompile(`docs/([\w/.-]+\.md)#([\w-]+)`)
	mdRef := regexp.MustCompile(`\]\(([\w/.-]*\.md)?#([\w-]+)\)`)
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); strings.HasPrefix(name, ".") && path != root || name == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case strings.HasSuffix(path, ".go"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range goRef.FindAllStringSubmatch(string(b), -1) {
				n++
				check(rel, filepath.Join("docs", m[1]), m[2])
			}
		case strings.HasSuffix(path, ".md") && strings.HasPrefix(rel, "docs"+string(filepath.Separator)):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range mdRef.FindAllStringSubmatch(string(b), -1) {
				n++
				page := rel
				if m[1] != "" {
					page = filepath.Join(filepath.Dir(rel), m[1])
				}
				check(rel, page, m[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("found no links into docs/")
	}
}
