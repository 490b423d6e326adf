package shmlink

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// foreignUID is the other user of these tests: nobody, present everywhere.
const foreignUID = 65534

// runForeignProbe is the "foreign-probe" child, run as foreignUID with
// the job's key: what another user would try on the parent's socket
// (childAddrEnv), each attempt reported on a line.
//
//	silent <closed|open> after=<duration> bytes=<n>
//	handshake <ok|error: ...>
//
// A silent connection shows whether the listener closes it at once; a
// handshake with the right key shows that the key alone is not enough.
func runForeignProbe() error {
	key, err := hex.DecodeString(os.Getenv(childKeyEnv))
	if err != nil {
		return err
	}
	addr := os.Getenv(childAddrEnv)
	c, err := net.Dial("unix", addr)
	if err != nil {
		return err
	}
	start := time.Now()
	c.SetReadDeadline(start.Add(5 * time.Second))
	n, err := io.Copy(io.Discard, c)
	state := "closed"
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		state = "open"
	}
	c.Close()
	fmt.Printf("silent %s after=%v bytes=%d\n", state, time.Since(start).Round(time.Millisecond), n)

	c, err = net.Dial("unix", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := wire.Handshake(ctx, c, key, wire.RoleClient, wire.Hello{Purpose: wire.PurposeShm, Rank: 1}); err != nil {
		fmt.Printf("handshake error: %v\n", err)
	} else {
		fmt.Println("handshake ok")
	}
	return nil
}

// startForeign runs the test binary as foreignUID in role, or skips the
// test where that cannot be done. The binary is copied where that user
// can run it (go test builds it in a directory of mode 0700).
func startForeign(t *testing.T, role, job, addr string, key []byte) (*child, io.WriteCloser) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to run a helper as uid %d (running as uid %d)", foreignUID, os.Geteuid())
	}
	dir, err := os.MkdirTemp("", "shmlink-foreign-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "shmlink.test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Dir = "/"
	cmd.Env = childEnv(role, job, addr, key)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: foreignUID, Gid: foreignUID}}
	return startCmd(t, cmd)
}

// TestForeignUserRefused: a process of another user that connects to a
// rank's socket is refused at once, before the handshake (it reads no
// byte, where a stranger of the job's user waits out the set-up timeout),
// even with the job's key; the refusals are counted and logged, and a
// rank of the job still connects.
func TestForeignUserRefused(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	ln, job, key, logs := listenLogged(t, slog.LevelInfo)
	c, _ := startForeign(t, "foreign-probe", job, ln.Addr(), key)

	silent := strings.Fields(c.expectWord(t, "silent"))
	if len(silent) != 3 || silent[0] != "closed" || silent[2] != "bytes=0" {
		t.Fatalf("another user's silent connection: %q, want it closed with no byte read", silent)
	}
	if after, err := time.ParseDuration(strings.TrimPrefix(silent[1], "after=")); err != nil || after > time.Second {
		t.Errorf("another user's silent connection was closed %s, want at once", silent[1])
	}
	if hs := c.expectWord(t, "handshake"); hs == "ok" {
		t.Errorf("another user with the job's key completed the handshake")
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	actx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if l, peer, err := ln.Accept(actx); err == nil {
		l.Close()
		t.Fatalf("accepted a link from rank %d of another user", peer)
	}
	if n := ln.foreign.Load(); n != 2 {
		t.Errorf("%d connections refused, want 2", n)
	}
	if want := fmt.Sprintf("another user: uid %d", foreignUID); !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, logs.String())
	}

	if err := genuineLink(t, ctx, ln, job, key); err != nil {
		t.Fatalf("a rank of the job: %v", err)
	}
}

// TestForeignListenerRefused: a dialer does not hand its segment to a
// socket of another user, even one that holds the job's key and the
// peer's name: Dial fails right after connecting, naming the user.
func TestForeignListenerRefused(t *testing.T) {
	job, key := newJobID(), newKey(t)
	c, _ := startForeign(t, "listen-only", job, "", key)
	addr := c.expectWord(t, "listening")
	start := time.Now()
	_, err := Dial(testCtx(t, 20*time.Second), DialConfig{JobID: job, Addr: addr, Key: key, Self: 1, Peer: 0, RingBytes: 4096})
	want := fmt.Sprintf("%s belongs to another user: uid %d", addr, foreignUID)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "rank 1 dial rank 0") {
		t.Fatalf("dial a socket of uid %d: %v, want an error naming both ranks and %q", foreignUID, err, want)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("took %v to fail", el)
	}
}
