package executor

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/transport"
	"github.com/hcclrun/hcclrun/runtime/transport/tcplink"
)

// peerLinks is the Links of a rank with a link per peer.
type peerLinks map[int]transport.Link

func (p peerLinks) Link(_ context.Context, peer int) (transport.Link, error) { return p[peer], nil }
func (p peerLinks) Open(peer int) transport.Link                             { return p[peer] }

// TestStartedSendBesideShm runs a step like that of a ring spanning two
// servers, as rank 1 sees it: a TCP send to rank 0 larger than the socket
// holds, and a receive from rank 2 over shared memory. The shm receive's
// waits do not write to sockets, so the step must hand its started send
// to the link's flusher (backgroundStarted): in a job the send would
// otherwise wait for the receive to end, the step taking the sum of the
// two instead of the longer. To make that show as a failure, rank 2 sends
// only once rank 0 has everything: without the hand-off rank 1 waits for
// rank 2, rank 2 for rank 0, and rank 0 for rank 1, until the deadline.
// Rank 0 reads with a plain socket, whose reads write no started sends.
func TestStartedSendBesideShm(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n, small = 4 << 20, 1000

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	dialed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	rank0 := <-accepted
	if rank0 == nil {
		t.Fatal("accept failed")
	}
	for _, c := range []net.Conn{rank0, dialed} {
		c.(*net.TCPConn).SetReadBuffer(64 << 10)
		c.(*net.TCPConn).SetWriteBuffer(64 << 10)
	}
	defer rank0.Close()
	to0 := tcplink.New(dialed, 0)
	defer to0.Close()
	to2, at2 := shmPair(t, ctx, 0, true)

	send := make([]byte, n)
	for i := range send {
		send[i] = byte(i*7 + i>>11)
	}
	fromTwo := bytes.Repeat([]byte{42}, small)

	// Rank 0: read frames until the transfer is in, then let rank 2 go.
	got := make([]byte, n)
	rank0Done := make(chan error, 1)
	go func() {
		var hdr [wire.HeaderSize]byte
		for off := 0; off < n; {
			var h wire.Header
			if _, err := io.ReadFull(rank0, hdr[:]); err != nil {
				rank0Done <- err
				return
			}
			if err := h.Decode(hdr[:]); err != nil {
				rank0Done <- err
				return
			}
			if int(h.Offset) != off || int(h.Len) > n-off {
				rank0Done <- io.ErrUnexpectedEOF
				return
			}
			if _, err := io.ReadFull(rank0, got[off:off+int(h.Len)]); err != nil {
				rank0Done <- err
				return
			}
			off += int(h.Len)
		}
		rank0Done <- nil
	}()
	rank2Done := make(chan error, 1)
	go func() {
		select {
		case err := <-rank0Done:
			if err != nil {
				rank2Done <- err
				return
			}
		case <-ctx.Done():
			rank2Done <- ctx.Err()
			return
		}
		e := New(2, oneLink{at2}, Config{})
		defer e.Close()
		p := &plan.Plan{Coll: plan.AllGather, Rank: 2, Size: 3, Steps: []plan.Step{{Ops: []plan.Op{
			{Kind: plan.OpSend, Peer: 1, Src: plan.Region{Buf: plan.BufSend, Len: small}},
		}}}}
		rank2Done <- e.Run(ctx, p, Call{Seq: 1, ElemSize: 1}, Buffers{Send: fromTwo})
	}()

	e := New(1, peerLinks{0: to0, 2: to2}, Config{})
	defer e.Close()
	p := &plan.Plan{Coll: plan.AllGather, Rank: 1, Size: 3, Steps: []plan.Step{{Ops: []plan.Op{
		{Kind: plan.OpSend, Peer: 0, Src: plan.Region{Buf: plan.BufSend, Len: n}},
		{Kind: plan.OpRecv, Peer: 2, Dst: plan.Region{Buf: plan.BufRecv, Len: small}},
	}}}}
	recv := make([]byte, small)
	if err := e.Run(ctx, p, Call{Seq: 1, ElemSize: 1}, Buffers{Send: send, Recv: recv}); err != nil {
		t.Fatalf("rank 1: %v", err)
	}
	if err := <-rank2Done; err != nil {
		t.Fatalf("rank 2 (or rank 0 before it): %v", err)
	}
	if !bytes.Equal(got, send) || !bytes.Equal(recv, fromTwo) {
		t.Fatal("wrong bytes")
	}
}
