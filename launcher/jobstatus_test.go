package launcher

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio/control"
)

func TestJobStatusFormat(t *testing.T) {
	st := &JobStatus{JobID: "j", Heartbeat: 500 * time.Millisecond, Hosts: []string{"h1", "h1", "h2"}, Ranks: []control.RankStatus{
		{Rank: 0, State: control.Alive, Seq: 9, InCall: true, Where: wire.MakeWhere(1, 2, 1), SilentFor: 100 * time.Millisecond},
		{Rank: 1, State: control.Alive, Seq: 8, InCall: false, SilentFor: 3 * time.Second},
		{Rank: 2, State: control.Lost, Seq: 0},
	}}
	var b bytes.Buffer
	if err := st.Format(&b, func(c uint8) string { return "Coll" + strconv.Itoa(int(c)) }); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, re := range []string{
		`(?m)^0\s+h1\s+alive\s+#9 Coll1 step 2\s+rank 1\s+100ms$`,
		`(?m)^1\s+h1\s+SILENT\s+between calls \(last #8\)\s+-\s+3s$`,
		`(?m)^2\s+h2\s+lost\s+-\s+-\s+0s$`,
		`(?m)^SILENT for more than 2 heartbeats .*: rank 1$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("status lacks %s:\n%s", re, out)
		}
	}
}

// TestQueryStatusSkipsStale: a socket nobody listens on (its launcher
// was killed) is removed and skipped; with no live job the error says so.
func TestQueryStatusSkipsStale(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", dir)
	if err := os.MkdirAll(StatusDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(StatusDir(), strconv.Itoa(os.Getpid())+".gone.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = QueryStatus(ctx, &bytes.Buffer{}, 0)
	if !errors.Is(err, ErrNoJob) {
		t.Fatalf("got %v, want ErrNoJob", err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale socket left: %v", err)
	}
}
