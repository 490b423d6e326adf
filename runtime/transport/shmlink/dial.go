package shmlink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/shm"
)

// DialConfig says which link to open.
type DialConfig struct {
	JobID string // HCCL_JOB_ID
	// Addr is the listener's socket name, its Listener.Addr as the peer
	// published it; it must be a name of JobID and Peer (name.go).
	Addr      string
	Key       []byte // the job key: authenticates both sides
	Self      int    // this rank (the higher of the two)
	Peer      int    // the listening rank
	RingBytes int    // data capacity per direction; 0 means DefaultRingBytes
	// Tag tells the listener which of the rank's link sets the link
	// belongs to (Link.Tag): the runtime's communicator and channel.
	Tag uint32
	// NoDirect keeps every payload in the rings: neither side reads the
	// other's memory in place (direct.go), whatever the kernel allows.
	NoDirect bool
	// PipeBytes is the size asked of each of the link's two pipes
	// (splice.go; PipeBytes gives it for the ranks of a host); 0 means
	// 1 MiB.
	PipeBytes int
	// NoPipes reads payloads handed over in place with
	// process_vm_readv alone: the link has no pipes for their heads.
	NoPipes bool
	// Segment is passed to shm.Create; its zero value creates in
	// /dev/shm. Tests inject a fake free-space function through it, and
	// Lazy leaves the pages of both sides to fault in at first touch.
	Segment shm.Options
	// Wait is how this side's calls wait for the peer; the zero value
	// is shm's default (shm.WaitPolicy). Each side waits as its own
	// config says: the listener's is ListenConfig.Wait.
	Wait shm.WaitPolicy
	// NoShare keeps this side, receiving, from offering the sender a
	// share of the copy of a payload handed over in place (share.go).
	NoShare bool
}

// Dial connects to the peer's Listener, checks that it runs as this
// process's user, authenticates, creates the segment holding both rings
// and hands it over. It makes one attempt: a peer that is not listening
// (not started, already gone, or in another network namespace) fails at
// once with an error saying so, and a peer that answers but stalls fails
// when ctx ends or after 10 s.
func Dial(ctx context.Context, cfg DialConfig) (*Link, error) {
	l, err := dial(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("shmlink: rank %d dial rank %d: %w", cfg.Self, cfg.Peer, err)
	}
	return l, nil
}

func dial(ctx context.Context, cfg DialConfig) (*Link, error) {
	if cfg.Self == cfg.Peer {
		return nil, errors.New("a rank cannot dial itself")
	}
	capacity, err := RingCapacity(cfg.RingBytes)
	if err != nil {
		return nil, err
	}
	addr := cfg.Addr
	if err := checkAddr(addr, cfg.JobID, cfg.Peer); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	// Before the peer is disturbed: a full /dev/shm fails here, not
	// after the handshake with a dropped connection on the peer's side.
	if err := shm.CheckSpace(segmentDir(cfg.Segment), uint64(2*shm.RingBytes(capacity)), cfg.Segment.FreeSpace); err != nil {
		return nil, err
	}

	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", addr)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("nobody listens on %s (peer not started or gone, or in another network namespace): %w", addr, err)
		}
		return nil, err
	}
	conn := c.(*net.UnixConn)
	ok := false
	defer func() {
		if !ok {
			conn.Close()
		}
	}()
	if err := checkPeerUser(conn); err != nil {
		return nil, fmt.Errorf("%s belongs to %w", addr, err)
	}
	me := wire.Hello{Purpose: wire.PurposeShm, Rank: uint32(cfg.Self), Tag: cfg.Tag}
	them, err := wire.Handshake(ctx, conn, cfg.Key, wire.RoleClient, me)
	if err != nil {
		return nil, err
	}
	if them.Purpose != wire.PurposeShm || them.Rank != uint32(cfg.Peer) {
		return nil, fmt.Errorf("%s answered as %v, want shm from rank %d", addr, them, cfg.Peer)
	}

	seg, err := shm.Create(2*shm.RingBytes(capacity), cfg.Segment)
	if err != nil {
		return nil, err
	}
	defer func() {
		if !ok {
			seg.Close()
		}
	}()
	tx, rx, err := ringsOf(seg.Bytes(), capacity, true, cfg.Wait)
	if err != nil {
		return nil, err
	}
	tx.PublishAddr() // before the listener can probe it
	stop := deadlineFrom(ctx, conn)
	defer stop()
	msg := segMsg{capacity: capacity, tag: cfg.Tag, direct: !cfg.NoDirect, lazy: cfg.Segment.Lazy}
	mine, theirs := noPipes, noPipes
	if msg.direct && !cfg.NoPipes {
		// Without pipes (out of descriptors) payloads are still read
		// in place, only slower: the error goes no further.
		var perr error
		mine, theirs, perr = newPipes(cfg.PipeBytes)
		msg.pipes = perr == nil
	}
	defer theirs.close() // the listener has its own copies once sent
	defer func() {
		if !ok {
			mine.close()
		}
	}()
	var extra []int
	if msg.pipes {
		extra = []int{theirs.in, theirs.out}
	}
	if err := seg.Send(conn, msg.encode(), extra...); err != nil {
		return nil, ctxOr(ctx, err)
	}
	if !cfg.Segment.Lazy {
		warmRings(seg) // while the listener maps it and reads its own side
	}
	var ack [1]byte
	if _, err := conn.Read(ack[:]); err != nil {
		return nil, ctxOr(ctx, fmt.Errorf("waiting for the peer to map the segment: %w", err))
	}
	if ack[0] != segAck {
		return nil, fmt.Errorf("peer answered %q to the segment", ack[0])
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return nil, err
	}
	ok = true
	return newLink(cfg.Self, cfg.Peer, cfg.Tag, seg, tx, rx, conn, msg.direct, mine, !cfg.NoShare), nil
}

// deadlineFrom applies ctx's deadline to conn and makes cancelling ctx
// interrupt conn's blocked calls. The returned stop undoes the latter.
func deadlineFrom(ctx context.Context, conn net.Conn) (stop func() bool) {
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	return context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
}

// ctxOr prefers ctx's error, which says why a deadline fired, over the
// I/O timeout it caused.
func ctxOr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	return err
}

// segmentDir is the tmpfs shm.Create puts a segment of opt in.
func segmentDir(opt shm.Options) string {
	if opt.Dir != "" {
		return opt.Dir
	}
	return shm.DefaultDir
}
