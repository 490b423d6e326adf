package shmlink

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/shm"
	"golang.org/x/sys/unix"
)

// The environment of a re-executed test binary acting as the other rank.
const (
	childRoleEnv = "HCCLRUN_SHMLINK_TEST_CHILD"
	childJobEnv  = "HCCLRUN_SHMLINK_TEST_JOB"
	childKeyEnv  = "HCCLRUN_SHMLINK_TEST_KEY"
	childAddrEnv = "HCCLRUN_SHMLINK_TEST_ADDR" // the parent's socket, for the dialling roles
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		run := runChild
		switch role {
		case "token-ring":
			run = func(string) error { return runTokenRing() }
		case "foreign-probe":
			run = func(string) error { return runForeignProbe() }
		}
		if err := run(role); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild is the other rank. It prints "ready" once its link is up.
//
//	echo-dialer:   rank 1, dials rank 0, sends back every frame it gets
//	               until the parent closes the link.
//	source:        rank 1, dials rank 0, sends "<count> <size>" frames for
//	               each such line on stdin.
//	post-echo:     echo-dialer, but sends back by posting in place
//	               (TryPost, WaitPosted) what is large enough.
//	idle-dialer:   rank 1, dials rank 0, then reads nothing until killed.
//	wait-dialer:   rank 1, dials rank 0 (so it creates the segment), sends
//	               one frame, then blocks in RecvHeader until killed.
//	listen-only:   rank 0, listens until stdin closes.
//	wait-listener: rank 0, listens, accepts rank 1, sends one frame, then
//	               blocks in RecvHeader until killed.
//
// The listening roles print "listening <addr>" first; the dialling ones
// dial the parent's socket, childAddrEnv.
func runChild(role string) error {
	key, err := hex.DecodeString(os.Getenv(childKeyEnv))
	if err != nil {
		return err
	}
	job := os.Getenv(childJobEnv)
	ctx := context.Background()
	var link *Link
	if role == "listen-only" {
		ln, err := Listen(job, 0, key, nil)
		if err != nil {
			return err
		}
		defer ln.Close()
		fmt.Println("listening", ln.Addr())
		// Until the parent is done with us (stdin closes).
		io.Copy(io.Discard, os.Stdin)
		return nil
	}
	if role == "wait-listener" {
		ln, err := Listen(job, 0, key, nil)
		if err != nil {
			return err
		}
		fmt.Println("listening", ln.Addr())
		if link, _, err = ln.Accept(ctx); err != nil {
			return err
		}
	} else {
		// Small rings for the functional roles (many times smaller than
		// what they move), the default for the benchmark's source.
		ring := 64 << 10
		if role == "source" {
			ring = 0
		}
		if link, err = Dial(ctx, DialConfig{JobID: job, Addr: os.Getenv(childAddrEnv), Key: key, Self: 1, Peer: 0, RingBytes: ring}); err != nil {
			return err
		}
	}
	fmt.Println("ready")
	var h wire.Header
	switch role {
	case "source":
		// Send the frames the parent asks for on stdin ("<count> <size>").
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			var count, size int
			if _, err := fmt.Sscan(in.Text(), &count, &size); err != nil {
				return err
			}
			p := make([]byte, size)
			for i := range p {
				p[i] = byte(i) // real pages, as a rank's buffers are
			}
			h := wire.Header{Len: uint32(size)}
			start := time.Now()
			for i := 0; i < count; i++ {
				if err := link.Send(ctx, &h, p); err != nil {
					return err
				}
			}
			if os.Getenv("HCCLRUN_SHMLINK_TEST_VERBOSE") != "" {
				fmt.Fprintf(os.Stderr, "source: %d frames of %d bytes in %v\n", count, size, time.Since(start))
			}
		}
		return nil
	case "idle-dialer":
		time.Sleep(time.Hour) // the test kills it (its stdin is /dev/null)
		return nil
	case "echo-dialer", "post-echo", "region-echo":
		var region *shm.Region // region-echo: posts its echo from a region
		if role == "region-echo" {
			r, err := shm.NewRegion(8 << 20)
			if err != nil {
				return err
			}
			defer r.Free()
			region = r
		}
		for {
			if err := link.RecvHeader(ctx, &h); err != nil {
				if errors.Is(err, shm.ErrPeerClosed) || errors.Is(err, shm.ErrPeerGone) {
					return nil
				}
				return err
			}
			p := make([]byte, h.Len)
			if region != nil {
				p = region.Bytes()[:h.Len]
			}
			if err := link.RecvPayload(ctx, p); err != nil {
				return err
			}
			if role != "echo-dialer" {
				posted, err := link.TryPost(ctx, &h, p, true) // then only WaitPosted
				if err == nil && posted {
					err = link.WaitPosted(ctx)
				}
				if err != nil {
					return err
				}
				if posted {
					continue
				}
			}
			if err := link.Send(ctx, &h, p); err != nil {
				return err
			}
		}
	case "wait-dialer", "wait-listener":
		h := wire.Header{Seq: 1}
		if err := link.Send(ctx, &h, nil); err != nil {
			return err
		}
		err := link.RecvHeader(ctx, &h)
		return fmt.Errorf("RecvHeader returned: %v", err)
	}
	return fmt.Errorf("unknown role %q", role)
}

// child is a re-executed test binary; lines reads its stdout.
type child struct {
	cmd   *exec.Cmd
	lines *bufio.Scanner
}

// startChild starts a child in role; addr is the socket of the parent's
// listener, for a dialling role ("" for a listening one).
func startChild(t *testing.T, role, job, addr string, key []byte) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = childEnv(role, job, addr, key)
	c, stdin := startCmd(t, cmd)
	stdin.Close() // the roles started here read nothing
	return c
}

// childEnv is the environment of a child in role (see startChild).
func childEnv(role, job, addr string, key []byte) []string {
	return append(os.Environ(), childRoleEnv+"="+role, childJobEnv+"="+job, childAddrEnv+"="+addr, childKeyEnv+"="+hex.EncodeToString(key))
}

// startCmd starts cmd with its stdout to read and its stdin to write
// (closing it tells the child to end), and kills it, by PID, when the
// test ends.
func startCmd(t *testing.T, cmd *exec.Cmd) (*child, io.WriteCloser) {
	t.Helper()
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill() // harmless once it has exited
		cmd.Wait()
	})
	return &child{cmd: cmd, lines: bufio.NewScanner(out)}, stdin
}

// expect waits for the child to print line.
func (c *child) expect(t *testing.T, line string) {
	t.Helper()
	if rest := c.expectWord(t, line); rest != "" {
		t.Fatalf("child printed %q, want %q", c.lines.Text(), line)
	}
}

// expectWord waits for the child to print a line that starts with word
// and returns the rest of it, e.g. the address after "listening".
func (c *child) expectWord(t *testing.T, word string) string {
	t.Helper()
	done := make(chan bool, 1)
	go func() {
		done <- c.lines.Scan() && (c.lines.Text() == word || strings.HasPrefix(c.lines.Text(), word+" "))
	}()
	select {
	case ok := <-done:
		if !ok {
			t.Fatalf("child did not print %q (got %q, %v)", word, c.lines.Text(), c.lines.Err())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("child did not print %q within 20 s", word)
	}
	return strings.TrimPrefix(strings.TrimPrefix(c.lines.Text(), word), " ")
}

// killDuring runs call, which must block on the child, SIGKILLs the child
// once call is asleep, and checks that call then fails within seconds with
// shm.ErrPeerGone.
func (c *child) killDuring(t *testing.T, what string, call func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- call() }()
	time.Sleep(200 * time.Millisecond) // asleep in the futex by now
	killed := time.Now()
	if err := c.cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, shm.ErrPeerGone) {
			t.Errorf("%s: err = %v, want shm.ErrPeerGone", what, err)
		}
		t.Logf("%s failed %v after SIGKILL: %v", what, time.Since(killed), err)
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still blocked 5 s after SIGKILL", what)
	}
}

// ownShmNames lists the files in /dev/shm named by one of pids (the names
// shm gives where the tmpfs has no O_TMPFILE: the prefix, the pid, a
// dash). Other jobs' files, whatever their names, are not this test's.
func ownShmNames(t *testing.T, pids ...int) []string {
	t.Helper()
	ents, err := os.ReadDir(shm.DefaultDir)
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, e := range ents {
		for _, pid := range pids {
			if strings.HasPrefix(e.Name(), shm.NamePrefix+strconv.Itoa(pid)+"-") {
				ours = append(ours, e.Name())
			}
		}
	}
	return ours
}

// plantForeign leaves in /dev/shm, until the test ends, a file under shm's
// prefix that another job could have left (a rank killed between create
// and unlink): no leak check may take it for this test's. Its pid is
// pid_max, which no process can have.
func plantForeign(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	path := filepath.Join(shm.DefaultDir, shm.NamePrefix+strings.TrimSpace(string(b))+"-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("plant a foreign file: %v", err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(path) })
}

// childLink starts a child in a dialling role and returns the link it
// dialled, once the child says it is ready. The test's cleanup closes it.
func childLink(t *testing.T, ctx context.Context, role string) (*Link, *child) {
	t.Helper()
	return childLinkWith(t, ctx, role, ListenConfig{})
}

// childLinkWith is childLink with this side's link accepted as lc says.
func childLinkWith(t *testing.T, ctx context.Context, role string, lc ListenConfig) (*Link, *child) {
	t.Helper()
	job, key := newJobID(), newKey(t)
	ln, err := lc.Listen(job, 0, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := startChild(t, role, job, ln.Addr(), key)
	link, peer, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	if peer != 1 {
		t.Fatalf("peer %d", peer)
	}
	c.expect(t, "ready")
	return link, c
}

// TestTwoProcesses streams frames to a child rank and checks the echo.
func TestTwoProcesses(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	link, c := childLink(t, ctx, "echo-dialer")
	if got := ownShmNames(t, os.Getpid(), c.cmd.Process.Pid); len(got) > 0 {
		t.Errorf("/dev/shm holds %v while the link is up", got)
	}
	sizes := []int{0, 1, 100, 64 << 10, 1 << 20, 16 << 20} // up to 256 times the 64 KiB ring
	sent := make(chan error, 1)
	go func() {
		for i, n := range sizes {
			p := make([]byte, n)
			for j := range p {
				p[j] = byte(i + j)
			}
			h := wire.Header{Seq: uint64(i), Len: uint32(n)}
			if err := link.Send(ctx, &h, p); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	for i, n := range sizes {
		var h wire.Header
		if err := link.RecvHeader(ctx, &h); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		p := make([]byte, h.Len)
		if err := link.RecvPayload(ctx, p); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		want := make([]byte, n)
		for j := range want {
			want[j] = byte(i + j)
		}
		if h.Seq != uint64(i) || !bytes.Equal(p, want) {
			t.Fatalf("frame %d: seq %d, %d bytes, equal %v", i, h.Seq, len(p), bytes.Equal(p, want))
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	link.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// TestPeerKilled SIGKILLs the child rank while the parent waits for a frame
// from it, with the child as the segment's creator and as the listener.
// The parent must get an error within a few seconds (the liveness socket
// reports the death at once) and /dev/shm must hold nothing of ours.
func TestPeerKilled(t *testing.T) {
	for _, role := range []string{"wait-dialer", "wait-listener"} {
		t.Run(role, func(t *testing.T) {
			ctx := testCtx(t, 60*time.Second)
			plantForeign(t)
			job, key := newJobID(), newKey(t)
			var link *Link
			var c *child
			if role == "wait-dialer" {
				ln, err := Listen(job, 0, key, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				c = startChild(t, role, job, ln.Addr(), key)
				if link, _, err = ln.Accept(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				c = startChild(t, role, job, "", key)
				addr := c.expectWord(t, "listening")
				var err error
				if link, err = Dial(ctx, DialConfig{JobID: job, Addr: addr, Key: key, Self: 1, Peer: 0, RingBytes: 64 << 10}); err != nil {
					t.Fatal(err)
				}
			}
			defer link.Close()
			c.expect(t, "ready")
			var h wire.Header
			if err := link.RecvHeader(ctx, &h); err != nil || h.Seq != 1 {
				t.Fatalf("first frame: %+v %v", h, err)
			}
			if err := link.RecvPayload(ctx, nil); err != nil {
				t.Fatal(err)
			}
			c.killDuring(t, "RecvHeader", func() error { return link.RecvHeader(ctx, &h) })
			sendErr := link.Send(ctx, &wire.Header{Len: 4}, make([]byte, 4))
			if !errors.Is(sendErr, shm.ErrPeerGone) {
				t.Errorf("Send to a dead peer: %v", sendErr)
			}
			c.cmd.Wait()
			if got := ownShmNames(t, os.Getpid(), c.cmd.Process.Pid); len(got) > 0 {
				t.Errorf("/dev/shm holds %v after SIGKILL", got)
			}
		})
	}
}

// TestOtherNetworkNamespace: a rank in another network namespace (here a
// child started under unshare --net) is not reachable through the
// abstract socket, and Dial says so at once instead of hanging. The
// runtime then uses TCP for that pair.
func TestOtherNetworkNamespace(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare(1) not installed")
	}
	job, key := newJobID(), newKey(t)
	cmd := exec.Command(unshare, "--net", os.Args[0], "-test.run=^$")
	cmd.Env = childEnv("listen-only", job, "", key)
	c, _ := startCmd(t, cmd)
	ready := make(chan bool, 1)
	go func() { ready <- c.lines.Scan() && strings.HasPrefix(c.lines.Text(), "listening ") }()
	select {
	case ok := <-ready:
		if !ok {
			t.Skipf("child under unshare --net did not start (not root?): %v", c.lines.Err())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("child did not start within 20 s")
	}
	addr := strings.TrimPrefix(c.lines.Text(), "listening ")
	start := time.Now()
	_, err = Dial(testCtx(t, 10*time.Second), DialConfig{JobID: job, Addr: addr, Key: key, Self: 1, Peer: 0})
	if err == nil || !strings.Contains(err.Error(), "nobody listens") {
		t.Fatalf("dial across network namespaces: %v, want \"nobody listens\"", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("took %v to fail", el)
	}
	// The same rank is reachable from its own namespace: listening in ours
	// under the same name does not collide with it.
	tag := addr[strings.LastIndexByte(addr, '/')+1:]
	ln, err := ListenConfig{Tag: tag}.Listen(job, 0, key, nil)
	if err != nil {
		t.Fatalf("listen under the same name in our namespace: %v", err)
	}
	ln.Close()
}
