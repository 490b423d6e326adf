package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestBuffSize200MB: HCCL_BUFFSIZE=200, HCCL's spelling of 200 MB, runs a
// job whose collectives come out exact.
func TestBuffSize200MB(t *testing.T) {
	t.Setenv("HCCL_BUFFSIZE", "200")
	const n = 2
	j := startJob(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, count := range []int{7, 3 << 20} { // 12 MiB of int32: several frames of the ring
		j.must(fmt.Sprintf("AllReduce of %d", count), func(c *hccl.Comm) error {
			buf := make([]int32, count)
			for i := range buf {
				buf[i] = int32(c.Rank()*count + i)
			}
			if err := hccl.AllReduce(ctx, c, buf, buf, hccl.Sum); err != nil {
				return err
			}
			for i, v := range buf {
				if want := int32(2*i + count); v != want {
					return fmt.Errorf("element %d: %d, want %d", i, v, want)
				}
			}
			return nil
		})
	}
	// The ring is 200 MiB rounded up to a power of two, unless /dev/shm
	// is too small for it (shmlink.FitRingBytes): only say what it was.
	for _, l := range j.comms[0].Links() {
		t.Logf("HCCL_BUFFSIZE=200: link to rank %d over %s, rings of %d bytes", l.Peer, l.Transport, l.RingBytes)
	}
}
