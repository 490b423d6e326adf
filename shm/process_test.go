package shm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// childEnv selects the role of a re-executed test binary (see TestMain).
const childEnv = "HCCLRUN_SHM_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		if err := runChild(role); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Layout used by the two-process tests: one segment, ring 0 carries bytes
// from the segment's creator to the other process, ring 1 the other way.
const procRing = 64 << 10

func twoRings(mem []byte, create bool) (out, in *Ring, err error) {
	open := func(b []byte) (*Ring, error) {
		if create {
			return NewRing(b, procRing, WaitPolicy{})
		}
		return OpenRing(b, WaitPolicy{})
	}
	r0, err := open(mem)
	if err != nil {
		return nil, nil, err
	}
	r1, err := open(mem[RingBytes(procRing):])
	if err != nil {
		return nil, nil, err
	}
	if create {
		return r0, r1, nil
	}
	return r1, r0, nil
}

// runChild is the other process. Its socket to the parent is fd 3.
//
//	echo:  map the parent's segment, copy everything from ring 0 to ring 1
//	       (length-prefixed by 8 bytes), exit.
//	pong:  map the parent's segment, send back every 8 bytes from ring 0
//	       on ring 1 until the parent closes.
//	small-tmpfs: see smallTmpfs (no socket).
//	wait:  create a segment, send it, write one byte to say it is ready,
//	       then block reading until killed.
func runChild(role string) error {
	if role == "small-tmpfs" {
		return smallTmpfs()
	}
	conn, err := net.FileConn(os.NewFile(3, "parent"))
	if err != nil {
		return err
	}
	uc := conn.(*net.UnixConn)
	ctx := context.Background()
	switch role {
	case "echo":
		seg, _, err := Receive(uc, make([]byte, 1))
		if err != nil {
			return err
		}
		out, in, err := twoRings(seg.Bytes(), false)
		if err != nil {
			return err
		}
		go Watch(uc, out, in)
		var lenb [8]byte
		if err := in.Read(ctx, lenb[:]); err != nil {
			return err
		}
		n := int(binary.LittleEndian.Uint64(lenb[:]))
		for n > 0 {
			b, err := in.Peek(ctx, n)
			if err != nil {
				return err
			}
			if err := out.Write(ctx, b); err != nil {
				return err
			}
			in.Release(len(b))
			n -= len(b)
		}
		// Wait until the parent has read everything, then leave.
		_, err = in.Peek(ctx, 1)
		if errors.Is(err, ErrPeerClosed) || errors.Is(err, ErrPeerGone) {
			return nil
		}
		return err
	case "pong":
		seg, _, err := Receive(uc, make([]byte, 1))
		if err != nil {
			return err
		}
		out, in, err := twoRings(seg.Bytes(), false)
		if err != nil {
			return err
		}
		go Watch(uc, out, in)
		var m [8]byte
		for {
			if err := in.Read(ctx, m[:]); err != nil {
				if errors.Is(err, ErrPeerClosed) || errors.Is(err, ErrPeerGone) {
					return nil
				}
				return err
			}
			if err := out.Write(ctx, m[:]); err != nil {
				return err
			}
		}
	case "wait":
		seg, err := Create(2*RingBytes(procRing), Options{})
		if err != nil {
			return err
		}
		out, in, err := twoRings(seg.Bytes(), true)
		if err != nil {
			return err
		}
		if err := seg.Send(uc, []byte{'s'}); err != nil {
			return err
		}
		if err := out.Write(ctx, []byte{'r'}); err != nil {
			return err
		}
		_, err = in.Peek(ctx, 1)
		return fmt.Errorf("wait returned: %v", err)
	}
	return fmt.Errorf("unknown role %q", role)
}

// watch runs Watch in a goroutine and returns the function that ends it:
// close the socket, wait for Watch to return. Defer it after the deferred
// seg.Close, so that it runs first: a Watch that aborts the rings after
// the segment is unmapped would write to memory that is gone.
func watch(conn net.Conn, rings ...*Ring) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(conn, rings...)
	}()
	return func() {
		conn.Close()
		<-done
	}
}

// startChild re-executes the test binary in role, connected to the parent
// by a unix socket pair.
func startChild(t *testing.T, role string) (*exec.Cmd, *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "mine"), os.NewFile(uintptr(fds[1]), "theirs")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role)
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	conn, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		cmd.Process.Kill() // by PID; harmless once it has exited
		cmd.Wait()
	})
	return cmd, conn.(*net.UnixConn)
}

func TestTwoProcessesEcho(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	cmd, conn := startChild(t, "echo")
	seg, err := Create(2*RingBytes(procRing), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	out, in, err := twoRings(seg.Bytes(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := seg.Send(conn, []byte{'s'}); err != nil {
		t.Fatal(err)
	}
	defer watch(conn, out, in)()

	const n = 8 << 20 // 128 times the ring
	src := pattern(n, 42)
	errc := make(chan error, 1)
	go func() {
		if err := out.Write(ctx, binary.LittleEndian.AppendUint64(nil, n)); err != nil {
			errc <- err
			return
		}
		errc <- out.Write(ctx, src)
	}()
	dst := make([]byte, n)
	if err := in.Read(ctx, dst); err != nil {
		t.Fatalf("read echo: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(src, dst) {
		t.Fatal("echo differs")
	}
	out.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if left := ownNames(t, DefaultDir, os.Getpid(), cmd.Process.Pid); len(left) > 0 {
		t.Errorf("%s holds %v", DefaultDir, left)
	}
}

// TestPeerKilledWhileWaiting: the child creates the segment, the parent
// waits on it, the child is SIGKILLed. The parent's wait must fail within
// seconds (the liveness socket reports the death) and /dev/shm must hold
// nothing of ours.
func TestPeerKilledWhileWaiting(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	cmd, conn := startChild(t, "wait")
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	seg, _, err := Receive(conn, make([]byte, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	conn.SetReadDeadline(time.Time{})
	id := mappedFile(t, seg.Bytes())
	out, in, err := twoRings(seg.Bytes(), false)
	if err != nil {
		t.Fatal(err)
	}
	stopWatch := watch(conn, out, in)
	defer stopWatch()
	var ready [1]byte
	if err := in.Read(ctx, ready[:]); err != nil || ready[0] != 'r' {
		t.Fatalf("ready: %q %v", ready, err)
	}
	if left := ownNames(t, DefaultDir, os.Getpid(), cmd.Process.Pid); len(left) > 0 {
		t.Errorf("%s holds %v while both processes run", DefaultDir, left)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := in.Peek(ctx, 1)
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond) // let the parent fall asleep
	killed := time.Now()
	if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrPeerGone) {
			t.Fatalf("err = %v, want ErrPeerGone", err)
		}
		t.Logf("wait failed %v after SIGKILL: %v", time.Since(killed), err)
		if el := time.Since(killed); el > 3*time.Second {
			t.Errorf("noticed the death after %v", el)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting 5 s after SIGKILL")
	}
	// A write towards the dead peer fails too.
	if err := out.Write(ctx, []byte{1}); !errors.Is(err, ErrPeerGone) {
		t.Errorf("write after death: %v", err)
	}
	cmd.Wait()
	if left := ownNames(t, DefaultDir, os.Getpid(), cmd.Process.Pid); len(left) > 0 {
		t.Errorf("%s holds %v after SIGKILL", DefaultDir, left)
	}
	// With its creator dead, the segment lives only in this process: once
	// unmapped here, nothing refers to it any more.
	stopWatch()
	if err := seg.Close(); err != nil {
		t.Fatal(err)
	}
	if h := holders(t, os.Getpid(), id); len(h) > 0 {
		t.Errorf("the segment is still held after Close: %v", h)
	}
}

// TestWakeCrossesProcesses bounces small messages off a child process.
// The waiting side sleeps in the futex after a few microseconds, so every
// round trip relies on a FUTEX_WAKE from the other process reaching it: a
// private futex (or a missed wake-up) would cost a WakePeriod timeout per
// message instead.
func TestWakeCrossesProcesses(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	cmd, conn := startChild(t, "pong")
	seg, err := Create(2*RingBytes(procRing), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	out, in, err := twoRings(seg.Bytes(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := seg.Send(conn, []byte{'s'}); err != nil {
		t.Fatal(err)
	}
	defer watch(conn, out, in)()
	const rounds = 200
	var lat []time.Duration
	var m [8]byte
	for i := 0; i < rounds; i++ {
		// Pause longer than the spin so the child is asleep when the
		// message arrives.
		time.Sleep(200 * time.Microsecond)
		start := time.Now()
		binary.LittleEndian.PutUint64(m[:], uint64(i))
		if err := out.Write(ctx, m[:]); err != nil {
			t.Fatal(err)
		}
		if err := in.Read(ctx, m[:]); err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint64(m[:]); got != uint64(i) {
			t.Fatalf("round %d: got %d", i, got)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	t.Logf("round trip to a sleeping process: median %v, p90 %v", lat[rounds/2], lat[rounds*9/10])
	if lat[rounds/2] > WakePeriod/2 {
		t.Errorf("median round trip %v: wake-ups do not reach the other process", lat[rounds/2])
	}
	out.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// smallTmpfs runs in a child whose /dev/shm is a private 16 MiB tmpfs.
func smallTmpfs() error {
	const mib = 1 << 20
	// statfs sees the small tmpfs: the error comes before any file.
	_, err := Create(64*mib, Options{})
	var se *SpaceError
	if !errors.As(err, &se) {
		return fmt.Errorf("64 MiB in a 16 MiB tmpfs: %v, want a SpaceError", err)
	}
	want := "/dev/shm has 16 MiB free, this job needs 64 MiB: enlarge it or lower HCCL_BUFFSIZE"
	if err.Error() != want {
		return fmt.Errorf("message %q, want %q", err, want)
	}
	// A free-space check that lies (another rank took the space after
	// ours ran) is caught by fallocate, with the same kind of error.
	plenty := func(string) (uint64, error) { return 1 << 40, nil }
	_, err = Create(64*mib, Options{FreeSpace: plenty})
	if !errors.As(err, &se) || se.Need != 64*mib {
		return fmt.Errorf("fallocate beyond the tmpfs: %v, want a SpaceError", err)
	}
	// What fits, works, and counts against the tmpfs although its file
	// has no name (O_TMPFILE): the next CheckSpace sees it.
	before, err := StatfsFree(DefaultDir)
	if err != nil {
		return err
	}
	seg, err := Create(8*mib, Options{})
	if err != nil {
		return fmt.Errorf("8 MiB in a 16 MiB tmpfs: %w", err)
	}
	after, err := StatfsFree(DefaultDir)
	if err != nil {
		return err
	}
	if after > before || before-after < 8*mib {
		return fmt.Errorf("an 8 MiB segment took %d bytes of the tmpfs, want 8 MiB", before-after)
	}
	seg.Bytes()[8*mib-1] = 1
	seg.Close()
	ents, err := os.ReadDir(DefaultDir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%s holds %d entries after the failures", DefaultDir, len(ents))
	}
	return nil
}

// TestSmallTmpfs runs smallTmpfs in a child with its own mount namespace
// and a 16 MiB tmpfs on /dev/shm: the real "not enough shared memory"
// paths, statfs and fallocate, without touching the machine's /dev/shm.
func TestSmallTmpfs(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare(1) not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for a mount namespace")
	}
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs -o size=16m,mode=1777 hcclrun-test /dev/shm && exec "$0" -test.run='^$'`, os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=small-tmpfs")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
