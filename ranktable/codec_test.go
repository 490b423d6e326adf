package ranktable

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleSpec() Spec {
	return Spec{
		JobID:       "job-7",
		ControlAddr: "10.0.0.1:29500",
		Handoff:     3100 * time.Nanosecond,
		Servers: []ServerSpec{
			{ID: "h1", HostAddr: "10.0.0.1", Ranks: 2, CPUs: []int{0, 1, 2, 3}},
			{HostAddr: "fd00::2", Ranks: 3},
			{ID: "h3", Ranks: 1, CPUs: []int{7}},
		},
	}
}

func TestRoundTrip(t *testing.T) {
	tab, err := Generate(sampleSpec())
	if err != nil {
		t.Fatal(err)
	}
	data, err := tab.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data)
	if err != nil {
		t.Fatalf("parse of our own output: %v\n%s", err, data)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("validate of our own output: %v\n%s", err, data)
	}
	if !reflect.DeepEqual(got, tab) {
		t.Fatalf("round trip changed the table:\nwant %+v\ngot  %+v", tab, got)
	}
	if got.Handoff() != sampleSpec().Handoff {
		t.Errorf("handoff read back as %v, want %v", got.Handoff(), sampleSpec().Handoff)
	}
	again, err := got.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(data) {
		t.Fatalf("marshal is not stable:\n%s\n---\n%s", data, again)
	}
	// The wire form is HCCL's: every value a string, our fields present.
	for _, want := range []string{`"server_count": "3"`, `"rank_id": "5"`, `"cpu_list": "0-1"`,
		`"control_addr": "10.0.0.1:29500"`, `"handoff_ns": "3100"`, `"host_addr": "fd00::2"`, `"server_id": "fd00::2"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("marshalled table lacks %s:\n%s", want, data)
		}
	}
	if !strings.HasSuffix(string(data), "}\n") || !strings.Contains(string(data), "\n  \"") {
		t.Errorf("marshalled table is not indented JSON ending in a newline:\n%s", data)
	}
}

// TestHCCLTable reads a table in the shape of the HCCL documentation (2
// servers of 8 NPUs, device_ip set, no fields of ours, an unknown
// host_nic_ip) and checks the typed view.
func TestHCCLTable(t *testing.T) {
	tab, err := ReadFile(filepath.Join("testdata", "hccl_2x8.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := tab.Size(); got != 16 {
		t.Fatalf("Size = %d, want 16", got)
	}
	if got := len(tab.Servers()); got != 2 {
		t.Fatalf("len(Servers) = %d, want 2", got)
	}
	tests := []struct {
		rank int
		want Location
		ip   string
	}{
		{0, Location{Node: 0, Local: 0, LocalSize: 8}, "192.168.100.101"},
		{7, Location{Node: 0, Local: 7, LocalSize: 8}, "192.168.103.100"},
		{8, Location{Node: 1, Local: 0, LocalSize: 8}, "192.168.100.111"},
		{15, Location{Node: 1, Local: 7, LocalSize: 8}, "192.168.103.110"},
	}
	for _, tt := range tests {
		got, err := tab.Locate(tt.rank)
		if err != nil || got != tt.want {
			t.Errorf("Locate(%d) = %+v, %v; want %+v", tt.rank, got, err, tt.want)
		}
		s, d, err := tab.Device(tt.rank)
		if err != nil {
			t.Fatal(err)
		}
		if d.DeviceIP != tt.ip || s.ServerID != tab.ServerList[tt.want.Node].ServerID {
			t.Errorf("Device(%d) = %q on %q, want %q", tt.rank, d.DeviceIP, s.ServerID, tt.ip)
		}
	}
	if got := tab.FirstRank(1); got != 8 {
		t.Errorf("FirstRank(1) = %d, want 8", got)
	}
	for _, r := range []int{-1, 16} {
		if _, err := tab.Locate(r); err == nil {
			t.Errorf("Locate(%d) succeeded on a 16-rank table", r)
		}
	}
	if got := tab.FirstRank(2); got != -1 {
		t.Errorf("FirstRank(2) = %d, want -1", got)
	}
	if tab.JobID != "" || tab.ServerList[0].HostAddr != "" || tab.ServerList[0].Devices[0].LocalRank != "" {
		t.Errorf("fields of ours appeared in an HCCL table: %+v", tab)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in string
		path     string // "" means a syntax error
		wantMsg  string
	}{
		{"truncated", `{"status": "completed", "server_list": [`, "", "offset 40"},
		{"garbage", `{"status": completed}`, "", "offset 12"},
		{"top level array", `[1, 2]`, "", "is a JSON array, want an object"},
		{"count as number", `{"server_count": 2}`, "server_count", "is a JSON number, want a string"},
		{"server list object", `{"server_list": {}}`, "server_list", "is a JSON object, want an array"},
		{"server is string", `{"server_list": [{}, "h2"]}`, "server_list[1]", "is a JSON string, want an object"},
		{"server id number", `{"server_list": [{"server_id": 1}]}`, "server_list[0].server_id", "is a JSON number"},
		{"device not array", `{"server_list": [{"device": "0"}]}`, "server_list[0].device", "want an array"},
		{"rank as number", `{"server_list": [{"device": [{}]}, {"device": [{"rank_id": "1"}, {"rank_id": 2}]}]}`,
			"server_list[1].device[1].rank_id", "is a JSON number, want a string"},
		{"rank as bool", `{"server_list": [{"device": [{"rank_id": true}]}]}`, "server_list[0].device[0].rank_id", "JSON bool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tt.wantMsg)
			}
			var fe *FieldError
			if tt.path == "" {
				return
			}
			if !errors.As(err, &fe) || fe.Path != tt.path {
				t.Fatalf("error %q: want a FieldError at %q", err, tt.path)
			}
			if !strings.HasPrefix(err.Error(), tt.path+": ") {
				t.Errorf("error %q does not start with its path", err)
			}
		})
	}
}

func TestParseNullsAndUnknownFields(t *testing.T) {
	tab, err := Parse([]byte(`{"status": null, "extra": {"deep": [1, 2]}, "server_list": [{"device": [{"rank_id": null, "foo": 1}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if tab.Status != "" || len(tab.ServerList) != 1 || len(tab.ServerList[0].Devices) != 1 {
		t.Fatalf("unexpected table %+v", tab)
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rank_table.json")
	// An existing, world-readable file is replaced, not rewritten in place.
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, err := Generate(sampleSpec())
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, tab); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, tab) {
		t.Errorf("ReadFile(WriteFile(t)) != t")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after WriteFile, want 1 (temp file left behind?)", len(entries))
	}

	// An invalid table is refused and the file left alone.
	bad := *tab
	bad.Status = "initializing"
	if err := WriteFile(path, &bad); err == nil || !strings.Contains(err.Error(), "status") {
		t.Errorf("WriteFile of an invalid table: err = %v", err)
	}
	if got, err := ReadFile(path); err != nil || !reflect.DeepEqual(got, tab) {
		t.Errorf("a refused write changed the file: %v", err)
	}
	// A directory that does not exist fails cleanly.
	if err := WriteFile(filepath.Join(dir, "no", "such", "t.json"), tab); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}

func TestReadFileNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(path, []byte(`{"status": "completed", "version": "1.0", "server_count": "x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	if err == nil || !strings.Contains(err.Error(), path+": server_count: \"x\"") {
		t.Fatalf("ReadFile error = %v, want it to name the path and the field", err)
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("ReadFile error %v does not wrap a FieldError", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadFile of a missing file: %v, want ErrNotExist", err)
	}
}
