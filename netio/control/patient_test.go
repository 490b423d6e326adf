package control

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio"
)

// stallConn plays a reader that is not scheduled: the Reads it is told to
// stall sleep before they read, so that the deadline armed before them
// passes while the peer's bytes wait in the socket buffer, as they do for
// a process that an oversubscribed host leaves off the CPU.
type stallConn struct {
	net.Conn
	maxRead int // caps every Read (0: no cap), to cut messages in pieces

	mu      sync.Mutex
	reads   int             // Reads begun
	from    int             // the first Read to stall (counting from 1)
	stalls  []time.Duration // how long to stall Reads from, from+1, ...
	expired int             // stalled Reads that then failed on their deadline
	stalled chan struct{}   // closed when the last stalled Read returns
}

func newStallConn(c net.Conn) *stallConn { return &stallConn{Conn: c, stalled: make(chan struct{})} }

// stallNext stalls the next Reads to begin (not one already waiting), the
// i-th for ds[i].
func (c *stallConn) stallNext(ds ...time.Duration) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.from, c.stalls, c.stalled = c.reads+1, ds, make(chan struct{})
	return c.stalled
}

func (c *stallConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	c.reads++
	i := c.reads - c.from
	stall := c.from > 0 && i >= 0 && i < len(c.stalls)
	var d time.Duration
	if stall {
		d = c.stalls[i]
	}
	last, stalled := i == len(c.stalls)-1, c.stalled
	c.mu.Unlock()
	if c.maxRead > 0 && len(b) > c.maxRead {
		b = b[:c.maxRead]
	}
	if !stall {
		return c.Conn.Read(b)
	}
	time.Sleep(d)
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	if isTimeout(err) {
		c.expired++
	}
	c.mu.Unlock()
	if last {
		close(stalled)
	}
	return n, err
}

func (c *stallConn) expiredReads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.expired
}

// loadSlack is how much later than LostAfter plus the grace a silent peer
// may be declared lost: never sooner, but on a loaded host the reader
// wakes late, and an attempt that returns late is made again.
const loadSlack = 2 * time.Second

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
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
	b, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a = <-accepted
	if a == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestExpiredDeadlineHidesData pins down what the patient reader works
// around: once a read deadline has passed, Read fails without looking at
// the socket, though the peer's bytes are there.
func TestExpiredDeadlineHidesData(t *testing.T) {
	a, b := tcpPair(t)
	if _, err := b.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the bytes are in a's buffer
	a.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	time.Sleep(50 * time.Millisecond) // not scheduled past the deadline
	if n, err := a.Read(make([]byte, 16)); n != 0 || !isTimeout(err) {
		t.Fatalf("Read after the deadline: %d bytes, %v; want a timeout with the data unread", n, err)
	}
	a.SetReadDeadline(time.Now().Add(time.Second))
	if n, err := a.Read(make([]byte, 16)); n != 4 || err != nil {
		t.Fatalf("Read re-armed: %d bytes, %v; want the 4 bytes", n, err)
	}
}

// TestPatientReaderKeepsPartialMessage: a reader stalled past its
// deadline in the middle of a message completes the message.
func TestPatientReaderKeepsPartialMessage(t *testing.T) {
	const wait, grace = 200 * time.Millisecond, 50 * time.Millisecond
	a, b := tcpPair(t)
	sc := newStallConn(a)
	sc.maxRead = 10 // the first Read gets 10 bytes of the message
	sc.from, sc.stalls = 2, []time.Duration{2 * wait}
	r := bufio.NewReader(&patientReader{conn: sc, wait: wait, grace: grace})
	want := msg{Type: tPut, ID: 7, Key: "endpoint/3", Value: bytes.Repeat([]byte("v"), 100)}
	frame, err := appendMsg(nil, &want)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write(frame); err != nil {
		t.Fatal(err)
	}
	got, err := readMsg(r)
	if err != nil {
		t.Fatalf("readMsg: %v", err)
	}
	if got.Type != want.Type || got.ID != want.ID || got.Key != want.Key || !bytes.Equal(got.Value, want.Value) {
		t.Fatalf("read %+v, want %+v", got, want)
	}
	if sc.expiredReads() != 1 {
		t.Fatalf("%d stalled Reads hit their deadline, want 1 (the test did not stall the reader)", sc.expiredReads())
	}
}

// TestPatientReaderSilentPeer: with nothing to read, Read fails with a
// timeout after wait and grace, not before, not much later.
func TestPatientReaderSilentPeer(t *testing.T) {
	const wait, grace = 300 * time.Millisecond, 100 * time.Millisecond
	a, _ := tcpPair(t)
	pr := &patientReader{conn: a, wait: wait, grace: grace}
	start := time.Now()
	n, err := pr.Read(make([]byte, 16))
	d := time.Since(start)
	if n != 0 || !isTimeout(err) {
		t.Fatalf("Read from a silent peer: %d bytes, %v; want a timeout", n, err)
	}
	if d < wait+grace-10*time.Millisecond || d > wait+grace+loadSlack {
		t.Fatalf("timed out after %v, want about %v", d, wait+grace)
	}
}

// TestStarvedServerKeepsRanks: the server's read loops do not run for
// twice LostAfter (its process was starved), then miss their retry's
// deadline too, while both ranks heartbeat; no rank is declared lost.
func TestStarvedServerKeepsRanks(t *testing.T) {
	ctx := testCtx(t, 15*time.Second)
	var mu sync.Mutex
	var conns []*stallConn
	j := newJob(t, 2, func(c *ServerConfig) {
		c.wrap = func(nc net.Conn) net.Conn {
			sc := newStallConn(nc)
			mu.Lock()
			conns = append(conns, sc)
			mu.Unlock()
			return sc
		}
	})
	c0, c1 := j.dial(ctx, 0), j.dial(ctx, 1)
	mu.Lock()
	stalls := make([]<-chan struct{}, len(conns))
	for i, sc := range conns {
		// The retry is starved too: a third attempt reads.
		stalls[i] = sc.stallNext(2*testLostAfter, 2*testHeartbeat)
	}
	mu.Unlock()
	for _, ch := range stalls {
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal("the server's reads were never stalled")
		}
	}
	// Past the stall by more than the grace: a loss would have shown.
	time.Sleep(3 * testHeartbeat)
	if n := countEvents[RankLost](j.snapshot()); n != 0 {
		t.Fatalf("%d ranks declared lost by a starved server: %v", n, j.snapshot())
	}
	for _, sc := range conns {
		if sc.expiredReads() != 2 {
			t.Fatalf("stalled Reads hit their deadline %d times, want 2 (not starved past the deadline?)", sc.expiredReads())
		}
	}
	for r, st := range j.s.Status() {
		if st.State != Alive {
			t.Fatalf("rank %d %v after the server's stall", r, st.State)
		}
	}
	for _, c := range []*Client{c0, c1} {
		if err := c.Put(ctx, "after", []byte("stall")); err != nil {
			t.Fatalf("rank %d after the server's stall: %v", c.Rank(), err)
		}
	}
}

// TestStarvedClientKeepsServer: the client's read loop does not run for
// twice LostAfter while the server heartbeats; the client does not
// declare the server lost.
func TestStarvedClientKeepsServer(t *testing.T) {
	ctx := testCtx(t, 15*time.Second)
	j := newJob(t, 1, nil)
	var sc *stallConn
	c, err := dial(ctx, j.s.Addr(), j.key, 0, 1, nil, func(nc net.Conn) net.Conn { sc = newStallConn(nc); return sc })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-sc.stallNext(2 * testLostAfter):
	case <-ctx.Done():
		t.Fatal("the client's reads were never stalled")
	}
	time.Sleep(3 * testHeartbeat)
	if err := c.Err(); err != nil {
		t.Fatalf("a starved client gave up on a live server: %v", err)
	}
	if sc.expiredReads() != 1 {
		t.Fatalf("the stalled Read hit its deadline %d times, want 1", sc.expiredReads())
	}
	if err := c.Put(ctx, "after", []byte("stall")); err != nil {
		t.Fatal(err)
	}
	if n := countEvents[RankLost](j.snapshot()); n != 0 {
		t.Fatalf("rank declared lost: %v", j.snapshot())
	}
}

// TestSilentRankLostAfterGrace: a rank that joins and then sends nothing
// is still lost, after LostAfter and one heartbeat interval of grace.
func TestSilentRankLostAfterGrace(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	j := newJob(t, 2, nil)
	conn := rawJoin(t, ctx, j, 1)
	defer conn.Close()
	start := time.Now()
	e := j.waitEvent(5*time.Second, "RankLost for the silent rank", func(e Event) bool { l, ok := e.(RankLost); return ok && l.Rank == 1 })
	d, want := time.Since(start), testLostAfter+testHeartbeat
	if d < want-50*time.Millisecond || d > want+loadSlack {
		t.Fatalf("silent rank declared lost after %v, want about %v", d, want)
	}
	t.Logf("silent rank declared lost after %v", d)
	if !contains(e.(RankLost).Err.Error(), "no heartbeat for 700ms") {
		t.Fatalf("lost for the wrong reason: %v", e)
	}
}

// TestSilentServerLostAfterGrace: a server that admits a rank and then
// sends nothing is lost to it after LostAfter and the grace.
func TestSilentServerLostAfterGrace(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	key, err := wire.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := netio.Listen("127.0.0.1:0", key, wire.Hello{Purpose: wire.PurposeControl, Rank: wire.LauncherRank}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, _, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		r := bufio.NewReader(conn)
		if _, err := readMsg(r); err != nil {
			return
		}
		b, _ := appendMsg(nil, &msg{Type: tWelcome, Heartbeat: millis(testHeartbeat.Milliseconds()), LostAfter: millis(testLostAfter.Milliseconds())})
		conn.Write(b)
		// Then silence: read the rank's heartbeats, answer nothing.
		for {
			if _, err := readMsg(r); err != nil {
				return
			}
		}
	}()
	c, err := Dial(ctx, ln.Addr().String(), key, 0, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("a silent server was never declared lost")
	}
	d, want := time.Since(start), testLostAfter+testHeartbeat
	if d < want-50*time.Millisecond || d > want+loadSlack {
		t.Fatalf("silent server declared lost after %v, want about %v", d, want)
	}
	t.Logf("silent server declared lost after %v", d)
	if !errors.Is(c.Err(), ErrLost) || !contains(c.Err().Error(), "no heartbeat for 700ms") {
		t.Fatalf("Err %v, want ErrLost after no heartbeat", c.Err())
	}
}

// TestDeathNoticedBeforeLostAfter: with the default LostAfter, long
// enough for a loaded host, a rank killed with SIGKILL and a closed
// server are still noticed at once: their sockets close (EOF), no timer
// is involved.
func TestDeathNoticedBeforeLostAfter(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	j := newJob(t, 2, func(c *ServerConfig) { c.HeartbeatInterval, c.LostAfter = 0, 0 })
	if j.s.cfg.LostAfter != DefaultLostAfter {
		t.Fatalf("LostAfter %v, want the default %v", j.s.cfg.LostAfter, DefaultLostAfter)
	}
	rank0 := j.dial(ctx, 0)
	child, _ := startChild(t, "client", envAddr+"="+j.s.Addr(), envKey+"="+wire.EncodeKey(j.key), envRank+"=1", envSize+"=2")
	if _, err := rank0.Get(ctx, "child/1"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e := j.waitEvent(2*time.Second, "RankLost for the killed rank", func(e Event) bool { l, ok := e.(RankLost); return ok && l.Rank == 1 })
	if err := e.(RankLost).Err; contains(err.Error(), "no heartbeat") {
		t.Fatalf("killed rank lost by the timer: %v", err)
	}
	t.Logf("killed rank lost after %v: %v", time.Since(start), e)

	start = time.Now()
	j.s.Close()
	select {
	case <-rank0.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("rank 0 did not notice the closed server within 2s")
	}
	if err := rank0.Err(); !errors.Is(err, ErrLost) || contains(err.Error(), "no heartbeat") {
		t.Fatalf("rank 0: %v, want ErrLost from the closed socket", err)
	}
	t.Logf("closed server noticed after %v", time.Since(start))
}
