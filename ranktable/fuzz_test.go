package ranktable

import (
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics and that a table that parses and
// validates survives Marshal and Parse unchanged, still valid, with a stable
// encoding. The seed corpus is in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"status":"completed","version":"1.0","server_count":"1","server_list":[{"server_id":"a","device":[{"device_id":"0","rank_id":"0"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Parse(data)
		if err != nil {
			return
		}
		if tab.Validate() != nil {
			return
		}
		out, err := tab.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a valid table: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse of our own output: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(again, tab) {
			t.Fatalf("round trip changed the table:\n%#v\n%#v", tab, again)
		}
		if err := again.Validate(); err != nil {
			t.Fatalf("round trip made the table invalid: %v", err)
		}
		if out2, _ := again.Marshal(); string(out2) != string(out) {
			t.Fatalf("encoding not stable:\n%s\n%s", out, out2)
		}
		// The typed view agrees with the strings on a valid table.
		for r := range tab.Size() {
			_, d, err := tab.Device(r)
			if err != nil || d.RankID != itoa(r) {
				t.Fatalf("Device(%d) = %+v, %v", r, d, err)
			}
		}
	})
}
