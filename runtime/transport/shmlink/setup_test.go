package shmlink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/shm"
)

func TestRingCapacity(t *testing.T) {
	tests := []struct {
		in, want int
		err      bool
	}{
		{0, DefaultRingBytes, false},
		{4096, 4096, false},
		{4097, 8192, false},
		{8_000_000, 8 << 20, false},
		{shm.MinRingCapacity, shm.MinRingCapacity, false},
		{shm.MinRingCapacity - 1, 0, true},
		{-5, 0, true},
		{1<<30 + 1, 0, true},
	}
	for _, tt := range tests {
		got, err := RingCapacity(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("RingCapacity(%d) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
	if n, _ := SegmentBytes(0); n != 2*(DefaultRingBytes+shm.RingHeaderSize) {
		t.Errorf("SegmentBytes(0) = %d", n)
	}
}

func TestHostRingBytes(t *testing.T) {
	tests := []struct {
		ring, ranks, want int
	}{
		{0, 2, DefaultRingBytes},
		{0, FullRings + 1, DefaultRingBytes},
		{0, FullRings + 2, 2 << 20},
		{0, 64, 512 << 10},
		{0, 256, 128 << 10},
		{0, 4096, MinHostRingBytes},
		{16 << 20, 256, 512 << 10},
		{4096, 256, 4096}, // already small: as asked
		{100_000, 64, MinHostRingBytes},
	}
	for _, tt := range tests {
		if got := HostRingBytes(tt.ring, tt.ranks); got != tt.want {
			t.Errorf("HostRingBytes(%d, %d) = %d, want %d", tt.ring, tt.ranks, got, tt.want)
		}
	}
	// What a rank's links can hold stays bounded as the host grows.
	for ranks := 2; ranks <= 1024; ranks++ {
		ring := HostRingBytes(0, ranks)
		if all := (ranks - 1) * ring; all > FullRings*DefaultRingBytes && ring > MinHostRingBytes {
			t.Fatalf("%d ranks: %d links of %d bytes each way, over %d", ranks, ranks-1, ring, FullRings*DefaultRingBytes)
		}
	}
}

func TestSegMsgRoundTrip(t *testing.T) {
	for _, m := range []segMsg{
		{capacity: 4 << 20},
		{capacity: 64 << 10, tag: 3, direct: true, pipes: true, lazy: true},
		{capacity: 1 << 20, direct: true, lazy: true},
	} {
		got, err := decodeSegMsg(m.encode())
		if err != nil || got != m {
			t.Errorf("decode(encode(%+v)) = %+v, %v", m, got, err)
		}
	}
	b := segMsg{capacity: 4096}.encode()
	b[18] = 2
	if _, err := decodeSegMsg(b); err == nil {
		t.Error("a lazy flag of 2 decoded")
	}
}

func TestFitRingBytes(t *testing.T) {
	tests := []struct {
		ring, ranks int
		free        uint64
		want        int
	}{
		{4 << 20, 2, 1 << 30, 4 << 20},           // plenty
		{4 << 20, 8, 64 << 20, 512 << 10},        // Docker's 64 MiB: 56 rings in 32 MiB
		{1 << 20, 32, 512 << 20, 256 << 10},      // a test host: 992 rings in 256 MiB
		{128 << 10, 256, 24 << 30, 128 << 10},    // room enough
		{1 << 20, 64, 1 << 20, MinHostRingBytes}, // never below the floor
		{4096, 8, 0, 4096},                       // already small
		{4 << 20, 1, 0, 4 << 20},                 // no peers
	}
	for _, tt := range tests {
		got := FitRingBytes(tt.ring, tt.ranks, tt.free)
		if got != tt.want {
			t.Errorf("FitRingBytes(%d, %d, %d) = %d, want %d", tt.ring, tt.ranks, tt.free, got, tt.want)
		}
		if got > MinHostRingBytes && uint64(got)*uint64(tt.ranks*(tt.ranks-1)) > tt.free/2 {
			t.Errorf("FitRingBytes(%d, %d, %d) = %d: the full mesh takes more than half", tt.ring, tt.ranks, tt.free, got)
		}
	}
}

func TestSocketName(t *testing.T) {
	tag := randomTag()
	tests := []struct {
		job  string
		rank int
		tag  string
		want string // "" means an error
	}{
		{"job42", 3, "t1", "@hcclrun/job42/3/t1"},
		{"a-b_c.d", 0, "X_y-9", "@hcclrun/a-b_c.d/0/X_y-9"},
		{"", 0, "t", ""},
		{"x/y", 0, "t", ""},
		{"x\x00y", 0, "t", ""},
		{"job", -1, "t", ""},
		{"job", 0, "", ""},
		{"job", 0, "a/b", ""},
		{"job", 0, "a b", ""},
		{"job", 0, strings.Repeat("t", maxTag+1), ""},
		// The launcher's ids ("hccl-" and 12 hex digits) fit with the
		// random tag at any rank count the control plane allows, and so
		// does an id of 50 bytes.
		{"hccl-0123456789ab", 65535, tag, "@hcclrun/hccl-0123456789ab/65535/" + tag},
		{strings.Repeat("j", 50), 65535, tag, "@hcclrun/" + strings.Repeat("j", 50) + "/65535/" + tag},
		{strings.Repeat("j", 70), 0, tag, ""},
	}
	for _, tt := range tests {
		got, err := socketName(tt.job, tt.rank, tt.tag)
		if tt.want == "" {
			if err == nil {
				t.Errorf("socketName(%q, %d, %q) = %q, want an error", tt.job, tt.rank, tt.tag, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("socketName(%q, %d, %q) = %q, %v; want %q", tt.job, tt.rank, tt.tag, got, err, tt.want)
		}
		if len(got) > maxName {
			t.Errorf("socketName(%q, %d, %q) is %d bytes, more than sun_path holds", tt.job, tt.rank, tt.tag, len(got))
		}
	}
}

// TestNamesAreUnguessable: two listeners of the same job and rank (as
// a squatter and the rank would be) get different names, each with 128
// bits of randomness, and a dialer accepts only a name of its job and
// peer.
func TestNamesAreUnguessable(t *testing.T) {
	job := newJobID()
	seen := map[string]bool{}
	for range 2 {
		ln, err := Listen(job, 0, newKey(t), nil)
		if err != nil {
			t.Fatalf("listen twice as rank 0: %v", err)
		}
		defer ln.Close()
		tag, ok := strings.CutPrefix(ln.Addr(), "@hcclrun/"+job+"/0/")
		if !ok || len(tag) != 2*tagBytes || seen[tag] {
			t.Errorf("Addr() = %q, want @hcclrun/%s/0/ and a fresh tag of %d hex digits", ln.Addr(), job, 2*tagBytes)
		}
		seen[tag] = true
	}
	for _, tt := range []struct {
		addr string
		ok   bool
	}{
		{"@hcclrun/" + job + "/0/abc", true},
		{"@hcclrun/" + job + "/0", false},
		{"@hcclrun/" + job + "/0/", false},
		{"@hcclrun/" + job + "/1/abc", false},
		{"@hcclrun/other/0/abc", false},
		{"@hcclrun/" + job + "/0/abc/../x", false},
		{"/tmp/sock", false},
	} {
		if err := checkAddr(tt.addr, job, 0); (err == nil) != tt.ok {
			t.Errorf("checkAddr(%q, rank 0) = %v, want ok %v", tt.addr, err, tt.ok)
		}
	}
}

// TestStrangersAreDropped: a dialer with the wrong key, a client speaking
// garbage and one saying nothing must not reach Accept, must be logged,
// and must not stop the genuine peer behind them.
func TestStrangersAreDropped(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	ln, job, key, logs := listenLogged(t, slog.LevelInfo)

	silent, err := net.Dial("unix", ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	garbage, err := net.Dial("unix", ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	garbage.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	garbage.Close()

	_, err = Dial(ctx, DialConfig{JobID: job, Addr: ln.Addr(), Key: newKey(t), Self: 2, Peer: 0})
	if !errors.Is(err, wire.ErrAuth) {
		t.Errorf("dial with a wrong key: %v, want wire.ErrAuth", err)
	}

	dc := make(chan error, 1)
	go func() {
		l, err := Dial(ctx, DialConfig{JobID: job, Addr: ln.Addr(), Key: key, Self: 1, Peer: 0, RingBytes: 4096})
		if err == nil {
			defer l.Close()
			if l.Peer() != 0 || l.Self() != 1 {
				err = errors.New("wrong ranks on the dialer side")
			}
		}
		dc <- err
	}()
	link, peer, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	if peer != 1 {
		t.Errorf("accepted rank %d, want 1 (the genuine dialer)", peer)
	}
	if err := <-dc; err != nil {
		t.Fatal(err)
	}
	// The listener logs a failure when its side of the handshake ends,
	// which may be after the genuine peer was accepted.
	for _, want := range []string{"not an hcclrun handshake", "authentication failed"} {
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(logs.String(), want) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), string(key)) {
		t.Error("the key appears in the log")
	}
}

func TestDialFailsClearly(t *testing.T) {
	key, job := newKey(t), newJobID()
	addr, err := socketName(job, 0, randomTag())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  DialConfig
		want string
	}{
		{"nobody listens", DialConfig{JobID: job, Addr: addr, Key: key, Self: 1, Peer: 0}, "nobody listens on @hcclrun/"},
		{"dial itself", DialConfig{JobID: job, Addr: addr, Key: key, Self: 1, Peer: 1}, "cannot dial itself"},
		{"bad ring", DialConfig{JobID: job, Addr: addr, Key: key, Self: 1, Peer: 0, RingBytes: 100}, "ring of 100 bytes"},
		{"bad job", DialConfig{JobID: "", Addr: addr, Key: key, Self: 1, Peer: 0}, "empty job id"},
		{"no name", DialConfig{JobID: job, Key: key, Self: 1, Peer: 0}, "rank 0 has no shared-memory socket"},
		{"name of another rank", DialConfig{JobID: job, Addr: addr, Key: key, Self: 1, Peer: 2}, "is not one of rank 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := Dial(testCtx(t, 10*time.Second), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "rank 1") {
				t.Errorf("err = %v does not name the rank", err)
			}
			if el := time.Since(start); el > time.Second {
				t.Errorf("failed after %v", el)
			}
		})
	}
}

// TestDialNoSpace fakes a small /dev/shm: Dial fails with the actionable
// message, the listener drops the half-made connection, and a later dial
// with room succeeds.
func TestDialNoSpace(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	job, key := newJobID(), newKey(t)
	ln, err := Listen(job, 0, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	small := func(string) (uint64, error) { return 64 << 20, nil }
	_, err = Dial(ctx, DialConfig{JobID: job, Addr: ln.Addr(), Key: key, Self: 1, Peer: 0, RingBytes: 256 << 20,
		Segment: shm.Options{FreeSpace: small}})
	if !errors.Is(err, shm.ErrNoSpace) {
		t.Fatalf("err = %v, want shm.ErrNoSpace", err)
	}
	if want := "/dev/shm has 64 MiB free, this job needs 512 MiB: enlarge it or lower HCCL_BUFFSIZE"; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to contain %q", err, want)
	}
	if err := genuineLink(t, ctx, ln, job, key); err != nil {
		t.Fatalf("dial with room: %v", err)
	}
}

// TestNameTaken: a name already bound (by a process that knew the tag)
// fails Listen with ErrNameTaken and a message that says so, not one
// that blames a rank of the job; the same rank listens on a fresh name
// and another rank under the same tag, which the runtime relies on to
// go on over TCP.
func TestNameTaken(t *testing.T) {
	job, tag := newJobID(), randomTag()
	name, err := socketName(job, 1, tag)
	if err != nil {
		t.Fatal(err)
	}
	squat, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer squat.Close()
	_, err = ListenConfig{Tag: tag}.Listen(job, 1, newKey(t), nil)
	if !errors.Is(err, ErrNameTaken) || !strings.Contains(err.Error(), "rank 1 listen on "+name+": shmlink: socket name taken by another process") {
		t.Fatalf("listen on a taken name: %v, want ErrNameTaken naming rank 1 and %s", err, name)
	}
	if strings.Contains(err.Error(), "already holds this rank") {
		t.Errorf("the error blames a rank of the job: %v", err)
	}
	for _, lc := range []struct {
		cfg  ListenConfig
		rank int
	}{{ListenConfig{}, 1}, {ListenConfig{Tag: tag}, 0}} {
		ln, err := lc.cfg.Listen(job, lc.rank, newKey(t), nil)
		if err != nil {
			t.Fatalf("listen as rank %d with %+v: %v", lc.rank, lc.cfg, err)
		}
		ln.Close()
	}
}

func TestAcceptEnds(t *testing.T) {
	ln, err := Listen(newJobID(), 0, newKey(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := ln.Accept(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Accept past deadline: %v", err)
	}
	// A connection stalled in the handshake must not hold up Close.
	stalled, err := net.Dial("unix", ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("Close took %v with a stalled handshake", el)
	}
	if _, _, err := ln.Accept(context.Background()); !errors.Is(err, ErrListenerClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
	ln.Close() // idempotent
}

func TestTagIsCarried(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	job, key := newJobID(), newKey(t)
	ln, err := Listen(job, 0, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dc := make(chan error, 1)
	go func() {
		l, err := Dial(ctx, DialConfig{JobID: job, Addr: ln.Addr(), Key: key, Self: 5, Peer: 0, Tag: 3, RingBytes: 4096})
		if err == nil {
			if l.Tag() != 3 {
				err = fmt.Errorf("dialer side tag %d", l.Tag())
			}
			l.Close()
		}
		dc <- err
	}()
	link, peer, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	if err := <-dc; err != nil {
		t.Fatal(err)
	}
	if peer != 5 || link.Tag() != 3 || link.RingBytes() != 4096 {
		t.Errorf("accepted peer %d tag %d ring %d", peer, link.Tag(), link.RingBytes())
	}
}

// TestGivingUpIsQuiet: a rank that authenticates and then hangs up before
// sending its segment (its /dev/shm full: it falls back to TCP and says
// so itself) is not warned about by the listener, while a stranger still
// is.
func TestGivingUpIsQuiet(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	ln, _, key, logs := listenLogged(t, slog.LevelDebug)
	c, err := net.Dial("unix", ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wire.Handshake(ctx, c, key, wire.RoleClient, wire.Hello{Purpose: wire.PurposeShm, Rank: 1}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	stranger, err := net.Dial("unix", ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	stranger.Write([]byte("not a handshake at all, but long enough to be read"))
	stranger.Close()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		out := logs.String()
		if strings.Contains(out, "gave up its link") && strings.Contains(out, "dropped a connection") {
			if strings.Count(out, "level=WARN") != 1 {
				t.Errorf("want one warning (the stranger's):\n%s", out)
			}
			return
		}
	}
	t.Fatalf("no log of the rank that gave up and of the stranger:\n%s", logs.String())
}
