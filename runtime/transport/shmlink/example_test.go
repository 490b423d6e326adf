package shmlink_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/transport/shmlink"
)

// Two ranks of one job: rank 0 listens, rank 1 dials, and a frame goes
// from 1 to 0. In a job the ranks are processes and the job id and key
// come from HCCL_JOB_ID and HCCL_JOB_KEY; here both sides run in one
// process.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key, _ := wire.NewKey()
	job := fmt.Sprintf("example-%d", time.Now().UnixNano())

	ln, err := shmlink.Listen(job, 0, key, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()

	go func() {
		l, err := shmlink.Dial(ctx, shmlink.DialConfig{JobID: job, Addr: ln.Addr(), Key: key, Self: 1, Peer: 0})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer l.Close()
		msg := []byte("hello over shared memory")
		h := wire.Header{Seq: 1, Src: 1, Len: uint32(len(msg))}
		if err := l.Send(ctx, &h, msg); err != nil {
			fmt.Println(err)
		}
	}()

	link, peer, err := ln.Accept(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer link.Close()
	var h wire.Header
	if err := link.RecvHeader(ctx, &h); err != nil {
		fmt.Println(err)
		return
	}
	// Look at the payload in place, as a reduction would.
	err = link.VisitPayload(ctx, int(h.Len), func(off int, b []byte) {
		fmt.Printf("from rank %d, seq %d: %s\n", peer, h.Seq, b)
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: from rank 1, seq 1: hello over shared memory
}
