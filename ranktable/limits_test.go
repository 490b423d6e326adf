package ranktable

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLimits: a table of more than MaxRanks ranks, a file of more than
// MaxFileBytes and a huge value are refused with short, clear errors,
// without reading the file or quoting the value whole.
func TestLimits(t *testing.T) {
	t.Run("ranks", func(t *testing.T) {
		for _, n := range []int{MaxRanks, MaxRanks + 1, 300000} {
			devs := make([]Device, n)
			for j := range devs {
				devs[j] = Device{DeviceID: strconv.Itoa(j), RankID: strconv.Itoa(j)}
			}
			tab := &Table{Status: StatusCompleted, Version: Version, ServerCount: "1", ServerList: []Server{{ServerID: "h", Devices: devs}}}
			err := tab.Validate()
			var fe *FieldError
			switch {
			case n <= MaxRanks && err != nil:
				t.Errorf("%d ranks: %v", n, err)
			case n > MaxRanks && (!errors.As(err, &fe) || fe.Path != "server_list" || !strings.Contains(err.Error(), "holds "+strconv.Itoa(n)+" ranks, more than the 65536")):
				t.Errorf("%d ranks: %v, want server_list's size refused", n, err)
			}
		}
		if _, err := Generate(Spec{Servers: []ServerSpec{{ID: "a", Ranks: MaxRanks}, {ID: "b", Ranks: 1}}}); err == nil || !strings.Contains(err.Error(), "65536") {
			t.Errorf("Generate of %d ranks: %v", MaxRanks+1, err)
		}
	})
	t.Run("file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "big.json")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		// Sparse: refused from its size, never read.
		if err := f.Truncate(MaxFileBytes + 1); err != nil {
			t.Fatal(err)
		}
		f.Close()
		start := time.Now()
		_, err = ReadFile(path)
		want := path + ": 67108865 bytes, more than the 64 MiB a rank table may have"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadFile: %v, want %q", err, want)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("took %v: the file was read", d)
		}
		// A device yields bytes for ever: refused after the limit.
		if _, err := ReadFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "/dev/zero: more than the 64 MiB") {
			t.Errorf("ReadFile(/dev/zero): %v", err)
		}
	})
	t.Run("quote", func(t *testing.T) {
		tab := validTable(t)
		tab.ServerList[1].Devices[2].RankID = strings.Repeat("7x", 5<<20)
		err := tab.Validate()
		if err == nil || len(err.Error()) > 200 || !strings.Contains(err.Error(), `..." (10485760 bytes)`) {
			t.Errorf("error of %d bytes: %.300s", len(err.Error()), err)
		}
		if got := cut("é" + strings.Repeat("é", 50)); len(got) > maxQuoted+3 || !strings.HasSuffix(got, "...") || strings.ContainsRune(got, '\uFFFD') {
			t.Errorf("cut split a rune or kept too much: %q", got)
		}
	})
}
