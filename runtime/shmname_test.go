package runtime_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestShmNameTaken: a process that knows the tag of the ranks'
// shared-memory socket names (HCCL_SHM_SOCKET_TAG) and binds rank 1's name
// before it does must not fail the job. Rank 1 warns once and publishes
// no socket, rank 2 links to it over TCP without trying shared memory
// (no fallback warning), every other pair of ranks still links over
// shared memory, and the collectives are right.
func TestShmNameTaken(t *testing.T) {
	var rnd [6]byte
	rand.Read(rnd[:])
	jobID, tag := "test-taken-"+hex.EncodeToString(rnd[:]), "squatted"
	t.Setenv("HCCL_SHM_SOCKET_TAG", tag)
	// The second name is the one ranks used before names had a tag, so
	// that this test fails there too.
	for _, name := range []string{"@hcclrun/" + jobID + "/1/" + tag, "@hcclrun/" + jobID + "/1"} {
		squat, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer squat.Close()
	}
	var log syncbuf.Buffer
	j := newJobWithID(t, 3, 0, jobID, hccl.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	j.t = t
	ctx := context.Background()
	j.must("AllReduce", func(c *hccl.Comm) error {
		buf := make([]float32, 1<<12)
		for i := range buf {
			buf[i] = float32(c.Rank() + i)
		}
		if err := hccl.AllReduce(ctx, c, buf, buf, hccl.Sum); err != nil {
			return err
		}
		for i, v := range buf {
			if want := float32(3*i + 3); v != want {
				return fmt.Errorf("element %d is %v, want %v", i, v, want)
			}
		}
		return nil
	})
	links := 0
	for r, c := range j.comms {
		for _, l := range c.Links() {
			links++
			want := "shm"
			if min(r, l.Peer) == 1 && max(r, l.Peer) == 2 {
				want = "tcp" // rank 2 dials rank 1, whose name was taken
			}
			if l.Transport != want {
				t.Errorf("rank %d to rank %d over %s, want %s", r, l.Peer, l.Transport, want)
			}
		}
	}
	if links != 6 {
		t.Errorf("%d links open, want the 6 ends of a ring of 3", links)
	}
	out := log.String()
	if n := strings.Count(out, "level=WARN"); n != 1 || !strings.Contains(out, "shared-memory socket name is taken by another process") || !strings.Contains(out, "rank=1") {
		t.Errorf("want one warning, rank 1's about its taken name:\n%s", out)
	}
}
