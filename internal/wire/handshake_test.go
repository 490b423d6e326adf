package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// connPair returns two connected ends of the named kind.
func connPair(t *testing.T, kind string) (client, server net.Conn) {
	t.Helper()
	if kind == "pipe" {
		c, s := net.Pipe()
		t.Cleanup(func() { c.Close(); s.Close() })
		return c, s
	}
	var l net.Listener
	var err error
	switch kind {
	case "tcp":
		l, err = net.Listen("tcp", "127.0.0.1:0")
	case "unix":
		l, err = net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan net.Conn, 1)
	go func() {
		s, err := l.Accept()
		if err != nil {
			done <- nil
			return
		}
		done <- s
	}()
	c, err := net.Dial(l.Addr().Network(), l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-done
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

type hsResult struct {
	peer Hello
	err  error
}

// runPair runs both sides of a handshake concurrently.
func runPair(ctx context.Context, c, s net.Conn, ck, sk []byte, ch, sh Hello) (cr, sr hsResult) {
	done := make(chan hsResult, 1)
	go func() {
		p, err := Handshake(ctx, s, sk, RoleServer, sh)
		if err != nil {
			s.Close() // as a real server does, so the client is not left waiting
		}
		done <- hsResult{p, err}
	}()
	p, err := Handshake(ctx, c, ck, RoleClient, ch)
	if err != nil {
		c.Close()
	}
	cr = hsResult{p, err}
	sr = <-done
	return cr, sr
}

func TestHandshake(t *testing.T) {
	key, other := testKey(t), testKey(t)
	ch := Hello{Purpose: PurposeData, Rank: 3, Tag: 1}
	sh := Hello{Purpose: PurposeData, Rank: 5, Tag: 1}
	// "tcp-reversed": the accepting end takes RoleClient; the roles are
	// independent of who dialled.
	for _, kind := range []string{"pipe", "tcp", "tcp-reversed", "unix"} {
		for _, tc := range []struct {
			name   string
			ck, sk []byte
			ok     bool
		}{
			{"same key", key, key, true},
			{"wrong key", key, other, false},
			{"wrong key reversed", other, key, false},
		} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				ctx := testCtx(t, 5*time.Second)
				var c, s net.Conn
				if kind == "tcp-reversed" {
					s, c = connPair(t, "tcp")
				} else {
					c, s = connPair(t, kind)
				}
				cr, sr := runPair(ctx, c, s, tc.ck, tc.sk, ch, sh)
				if tc.ok {
					if cr.err != nil || sr.err != nil {
						t.Fatalf("client: %v, server: %v", cr.err, sr.err)
					}
					if cr.peer != sh || sr.peer != ch {
						t.Fatalf("client learned %v, server learned %v", cr.peer, sr.peer)
					}
					// The deadline is cleared and the connection carries data.
					go c.Write([]byte("ping"))
					b := make([]byte, 4)
					if _, err := io.ReadFull(s, b); err != nil || string(b) != "ping" {
						t.Fatalf("after handshake: %q, %v", b, err)
					}
					return
				}
				if !errors.Is(cr.err, ErrAuth) || !errors.Is(sr.err, ErrAuth) {
					t.Fatalf("client: %v, server: %v; want ErrAuth on both", cr.err, sr.err)
				}
			})
		}
	}
}

// recordingConn keeps a copy of everything read through it.
type recordingConn struct {
	net.Conn
	got bytes.Buffer
}

func (r *recordingConn) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.got.Write(p[:n])
	return n, err
}

func TestHandshakeReplayRejected(t *testing.T) {
	ctx := testCtx(t, 5*time.Second)
	key := testKey(t)
	ch := Hello{Purpose: PurposeControl, Rank: 1}
	sh := Hello{Purpose: PurposeControl, Rank: LauncherRank}

	// Record what an honest client sends in a successful handshake.
	c, s := connPair(t, "tcp")
	rec := &recordingConn{Conn: s}
	cr, sr := runPair(ctx, c, rec, key, key, ch, sh)
	if cr.err != nil || sr.err != nil {
		t.Fatalf("recording handshake: %v, %v", cr.err, sr.err)
	}
	transcript := rec.got.Bytes()
	if len(transcript) != hsHelloSize+macSize {
		t.Fatalf("recorded %d bytes, want %d", len(transcript), hsHelloSize+macSize)
	}

	// Replay it, message by message, to a fresh server session.
	c2, s2 := connPair(t, "tcp")
	done := make(chan error, 1)
	go func() {
		_, err := Handshake(ctx, s2, key, RoleServer, sh)
		done <- err
	}()
	if _, err := c2.Write(transcript[:hsHelloSize]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c2, make([]byte, hsHelloSize)); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Write(transcript[hsHelloSize:]); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrAuth) {
		t.Fatalf("server accepted or mis-failed a replay: %v", err)
	}
	ans := make([]byte, 1+macSize)
	if _, err := io.ReadFull(c2, ans); err != nil || ans[0] != statusNo {
		t.Fatalf("replayer got answer %x, %v; want a rejection", ans[:1], err)
	}
}

// TestHandshakeReflectionRejected plays a server that knows no key and
// sends the client's own messages back to it.
func TestHandshakeReflectionRejected(t *testing.T) {
	ctx := testCtx(t, 5*time.Second)
	c, s := connPair(t, "pipe")
	go func() {
		b := make([]byte, hsHelloSize)
		if _, err := io.ReadFull(s, b); err != nil {
			return
		}
		s.Write(b)
		mac := make([]byte, macSize)
		if _, err := io.ReadFull(s, mac); err != nil {
			return
		}
		s.Write(append([]byte{statusOK}, mac...))
	}()
	_, err := Handshake(ctx, c, testKey(t), RoleClient, Hello{Purpose: PurposeData, Rank: 2})
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("client accepted its own reflected proof: %v", err)
	}
}

func TestHandshakeBadPeers(t *testing.T) {
	key := testKey(t)
	for _, tc := range []struct {
		name  string
		send  []byte // what the bad client sends, then it stays silent
		close bool   // and then hangs up
		want  error
		max   time.Duration
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false, ErrNotHandshake, 100 * time.Millisecond},
		{"wrong version", []byte("HCHS\x07"), false, ErrNotHandshake, 100 * time.Millisecond},
		{"port scan", nil, true, ErrNotHandshake, 100 * time.Millisecond},
		{"truncated hello", []byte("HCHS\x01\x01\x00"), true, ErrNotHandshake, 100 * time.Millisecond},
		{"silent", nil, false, os.ErrDeadlineExceeded, 600 * time.Millisecond},
		{"slow loris", []byte("HCH"), false, os.ErrDeadlineExceeded, 600 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := connPair(t, "tcp")
			ctx := testCtx(t, 5*time.Second)
			hctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			if len(tc.send) > 0 {
				if _, err := c.Write(tc.send); err != nil {
					t.Fatal(err)
				}
			}
			if tc.close {
				c.Close()
			}
			start := time.Now()
			_, err := Handshake(hctx, s, key, RoleServer, Hello{Purpose: PurposeData})
			took := time.Since(start)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Handshake: %v, want %v", err, tc.want)
			}
			if took > tc.max {
				t.Fatalf("took %v, want at most %v", took, tc.max)
			}
		})
	}
}

func TestHandshakeCancel(t *testing.T) {
	c, _ := connPair(t, "tcp")
	ctx, cancel := context.WithCancel(testCtx(t, 5*time.Second))
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := Handshake(ctx, c, testKey(t), RoleClient, Hello{Purpose: PurposeData})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Handshake: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("cancel took %v", d)
	}
}

func TestHandshakeShortKey(t *testing.T) {
	c, _ := connPair(t, "pipe")
	for _, k := range [][]byte{nil, make([]byte, MinKeySize-1)} {
		if _, err := Handshake(testCtx(t, time.Second), c, k, RoleClient, Hello{}); err == nil {
			t.Fatalf("key of %d bytes accepted", len(k))
		}
	}
}
