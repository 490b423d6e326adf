package runtime_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
	"github.com/hcclrun/hcclrun/shm"
)

// callFn is what one rank calls in a failure test.
type callFn func(ctx context.Context, c *hccl.Comm) error

func allReduceF32(n int, op hccl.ReduceOp) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		b := make([]float32, n)
		return hccl.AllReduce(ctx, c, b, b, op)
	}
}

func allReduceI32(n int) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		b := make([]int32, n)
		return hccl.AllReduce(ctx, c, b, b, hccl.Sum)
	}
}

func allGatherF32(n int) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		return hccl.AllGather(ctx, c, make([]float32, n), make([]float32, n*c.Size()))
	}
}

func broadcastF32(n, root int) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		return hccl.Broadcast(ctx, c, make([]float32, n), root)
	}
}

func reduceF32(n, root int) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		return hccl.Reduce(ctx, c, make([]float32, n), make([]float32, n), hccl.Sum, root)
	}
}

func reduceScatterF32(n int, op hccl.ReduceOp) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		return hccl.ReduceScatter(ctx, c, make([]float32, n*c.Size()), make([]float32, n), op)
	}
}

func alltoallF32(n int) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		return hccl.AlltoAll(ctx, c, make([]float32, n*c.Size()), make([]float32, n*c.Size()))
	}
}

// alltoallvEach sends send elements to every other rank and expects recv
// from each (its own block has recv elements both ways).
func alltoallvEach(send, recv int) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		n := c.Size()
		sc, sd, rc, rd := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		for i := range n {
			sc[i], sd[i], rc[i], rd[i] = send, i*send, recv, i*recv
		}
		sc[c.Rank()] = recv
		return hccl.AlltoAllV(ctx, c, make([]float32, n*send), sc, sd, make([]float32, n*recv), rc, rd)
	}
}

func barrier(ctx context.Context, c *hccl.Comm) error { return c.Barrier(ctx) }

// TestMismatchedCalls: when ranks disagree on the collective or its
// arguments, no rank hangs and none returns success silently: the rank that
// sees the bad frame gets ErrMismatch naming both ranks and both calls, the
// others ErrMismatch or ErrAborted.
func TestMismatchedCalls(t *testing.T) {
	cases := []struct {
		name     string
		n        int
		odd      callFn // what the last rank calls
		common   callFn // what every other rank calls
		mentions []string
	}{
		{"collective", 2, allGatherF32(8), allReduceF32(8, hccl.Sum), []string{"AllReduce", "AllGather"}},
		{"count", 3, allReduceF32(1001, hccl.Sum), allReduceF32(1000, hccl.Sum), []string{"count=1000", "count=1001"}},
		{"dtype", 2, allReduceI32(16), allReduceF32(16, hccl.Sum), []string{"float32", "int32"}},
		{"op", 2, allReduceF32(16, hccl.Max), allReduceF32(16, hccl.Sum), []string{"sum", "max"}},
		{"reducescatter op", 3, reduceScatterF32(5, hccl.Min), reduceScatterF32(5, hccl.Sum), []string{"sum", "min"}},
		{"broadcast root", 2, broadcastF32(10, 1), broadcastF32(10, 0), []string{"root=0", "root=1"}},
		{"broadcast root 4 ranks", 4, broadcastF32(10, 3), broadcastF32(10, 0), []string{"root=0", "root=3"}},
		{"reduce root", 2, reduceF32(10, 1), reduceF32(10, 0), []string{"root=0", "root=1"}},
		{"alltoall count", 3, alltoallF32(4), alltoallF32(5), []string{"AlltoAll"}},
		{"alltoallv counts", 3, alltoallvEach(3, 2), alltoallvEach(2, 2), []string{"expects 2 elements"}},
		{"barrier vs allreduce", 2, barrier, allReduceF32(1, hccl.Sum), []string{"Barrier", "AllReduce"}},
		{"zero count", 2, allReduceF32(0, hccl.Sum), allReduceF32(4, hccl.Sum), []string{"count=0", "count=4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := startJob(t, tc.n)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			errs := j.each(func(c *hccl.Comm) error {
				if c.Rank() == tc.n-1 {
					return tc.odd(ctx, c)
				}
				return tc.common(ctx, c)
			})
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v to fail", d)
			}
			mismatches := 0
			for r, err := range errs {
				switch {
				case err == nil:
					// A rank may finish its part before the others notice;
					// its next call must then fail: aborted, or mismatched
					// when it reads the odd rank's frames of this call first
					// (a mesh Barrier does at once; runtime/callcheck.go).
					if err := barrier(ctx, j.comms[r]); !errors.Is(err, hccl.ErrAborted) && !errors.Is(err, hccl.ErrMismatch) {
						t.Errorf("rank %d: succeeded, and its next call returned %v, want ErrAborted or ErrMismatch", r, err)
					}
				case errors.Is(err, hccl.ErrMismatch):
					mismatches++
					var oe *hccl.OpError
					if !errors.As(err, &oe) || oe.Rank != r {
						t.Errorf("rank %d: %v is not an *OpError of this rank", r, err)
					}
					for _, m := range tc.mentions {
						if !strings.Contains(err.Error(), m) {
							t.Errorf("rank %d: %q does not mention %q", r, err, m)
						}
					}
				case errors.Is(err, hccl.ErrAborted):
				default:
					t.Errorf("rank %d: %v, want ErrMismatch or ErrAborted", r, err)
				}
			}
			if mismatches == 0 {
				t.Errorf("no rank reported ErrMismatch: %v", errs)
			}
		})
	}
}

// TestInvalidArguments: bad arguments fail on the calling rank before
// anything is sent, and leave the communicator usable.
func TestInvalidArguments(t *testing.T) {
	j := startJob(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := j.comms[0]
	buf := make([]float32, 8)
	ints := make([]int32, 8)
	cases := []struct {
		name string
		call func() error
	}{
		{"allreduce lengths", func() error { return hccl.AllReduce(ctx, c, buf, buf[:7], hccl.Sum) }},
		{"allreduce partial overlap", func() error { return hccl.AllReduce(ctx, c, buf[:4], buf[2:6], hccl.Sum) }},
		{"avg on integers", func() error { return hccl.AllReduce(ctx, c, ints, ints, hccl.Avg) }},
		{"unknown op", func() error { return hccl.AllReduce(ctx, c, buf, buf, hccl.ReduceOp(42)) }},
		{"broadcast root", func() error { return hccl.Broadcast(ctx, c, buf, 2) }},
		{"reduce negative root", func() error { return hccl.Reduce(ctx, c, buf, buf, hccl.Sum, -1) }},
		{"allgather recv length", func() error { return hccl.AllGather(ctx, c, buf[:4], buf[:7]) }},
		{"reducescatter send length", func() error { return hccl.ReduceScatter(ctx, c, buf[:7], make([]float32, 4), hccl.Sum) }},
		{"alltoall not a multiple", func() error { return hccl.AlltoAll(ctx, c, make([]float32, 3), make([]float32, 3)) }},
		{"alltoall in place", func() error { return hccl.AlltoAll(ctx, c, buf, buf) }},
		{"alltoallv counts length", func() error {
			return hccl.AlltoAllV(ctx, c, buf, []int{1}, []int{0}, make([]float32, 8), []int{1, 1}, []int{0, 1})
		}},
		{"alltoallv negative", func() error {
			return hccl.AlltoAllV(ctx, c, buf, []int{1, -1}, []int{0, 1}, make([]float32, 8), []int{1, 1}, []int{0, 1})
		}},
		{"alltoallv send range", func() error {
			return hccl.AlltoAllV(ctx, c, buf, []int{4, 5}, []int{0, 4}, make([]float32, 8), []int{1, 1}, []int{0, 1})
		}},
		{"alltoallv recv range", func() error {
			return hccl.AlltoAllV(ctx, c, buf, []int{1, 1}, []int{0, 1}, make([]float32, 8), []int{1, 1}, []int{0, 8})
		}},
		{"alltoallv overlapping receives", func() error {
			return hccl.AlltoAllV(ctx, c, buf, []int{1, 1}, []int{0, 1}, make([]float32, 8), []int{3, 3}, []int{0, 2})
		}},
		{"alltoallv in place", func() error {
			return hccl.AlltoAllV(ctx, c, buf, []int{1, 1}, []int{0, 1}, buf, []int{1, 1}, []int{2, 3})
		}},
		{"send to self", func() error { return hccl.Send(ctx, c, buf, 0) }},
		{"recv from nobody", func() error { return hccl.Recv(ctx, c, buf, 5) }},
	}
	for _, tc := range cases {
		err := tc.call()
		if !errors.Is(err, hccl.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	// Still usable: a correct call on both ranks works.
	j.must("allreduce after bad calls", func(c *hccl.Comm) error {
		b := []float32{float32(c.Rank() + 1)}
		if err := hccl.AllReduce(ctx, c, b, b, hccl.Sum); err != nil {
			return err
		}
		if b[0] != 3 {
			return fmt.Errorf("sum %v, want 3", b[0])
		}
		return nil
	})
}

// TestPeerGone: a rank that leaves while its peers wait in a collective
// makes them fail fast with ErrAborted naming it, over both transports.
func TestPeerGone(t *testing.T) {
	for _, tr := range []struct {
		name string
		opts []hccl.Option
	}{{"shm", nil}, {"tcp", []hccl.Option{hccl.WithShmDisabled(true)}}} {
		t.Run(tr.name, func(t *testing.T) {
			j := startJob(t, 3, tr.opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// Warm up: open every link.
			j.must("warm-up", func(c *hccl.Comm) error { return allReduceF32(4096, hccl.Sum)(ctx, c) })
			start := time.Now()
			errs := j.each(func(c *hccl.Comm) error {
				if c.Rank() == 1 {
					time.Sleep(100 * time.Millisecond)
					return c.Close()
				}
				return allReduceF32(1<<20, hccl.Sum)(ctx, c)
			})
			elapsed := time.Since(start)
			if errs[1] != nil {
				t.Errorf("rank 1 Close: %v", errs[1])
			}
			for _, r := range []int{0, 2} {
				if !errors.Is(errs[r], hccl.ErrAborted) {
					t.Errorf("rank %d: %v, want ErrAborted", r, errs[r])
				}
			}
			if elapsed > 2*time.Second {
				t.Errorf("peers took %v to notice", elapsed)
			}
			t.Logf("rank 0: %v (after %v)", errs[0], elapsed)
		})
	}
}

// TestUseAfterClose: calls on a closed communicator fail with ErrClosed.
func TestUseAfterClose(t *testing.T) {
	j := startJob(t, 1)
	c := j.comms[0]
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Barrier(context.Background()); !errors.Is(err, hccl.ErrClosed) {
		t.Fatalf("Barrier after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestExecTimeout: a rank that never calls makes the others fail within
// HCCL_EXEC_TIMEOUT with ErrTimeout naming the call, its number and the
// rank that has not arrived (STUCK: alive but behind).
func TestExecTimeout(t *testing.T) {
	j := startJob(t, 3, hccl.WithExecTimeout(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	j.must("first", func(c *hccl.Comm) error { return barrier(ctx, c) })
	release := make(chan struct{})
	start := time.Now()
	errs := j.each(func(c *hccl.Comm) error {
		if c.Rank() == 2 {
			<-release // alive (heartbeats go on) but never enters the call
			return nil
		}
		defer func() {
			if c.Rank() == 0 {
				close(release)
			}
		}()
		return allReduceF32(10, hccl.Sum)(ctx, c)
	})
	elapsed := time.Since(start)
	timeouts := 0
	for _, r := range []int{0, 1} {
		if errors.Is(errs[r], hccl.ErrTimeout) {
			timeouts++
			for _, want := range []string{"AllReduce", "#2", "HCCL_EXEC_TIMEOUT", "rank 2 STUCK"} {
				if !strings.Contains(errs[r].Error(), want) {
					t.Errorf("rank %d: %q lacks %q", r, errs[r], want)
				}
			}
		} else if !errors.Is(errs[r], hccl.ErrAborted) {
			t.Errorf("rank %d: %v, want ErrTimeout or ErrAborted", r, errs[r])
		}
	}
	if timeouts == 0 {
		t.Errorf("no rank timed out: %v", errs)
	}
	if elapsed > 5*time.Second {
		t.Errorf("took %v", elapsed)
	}
	t.Logf("after %v: %v", elapsed.Round(time.Millisecond), errs[0])
}

// TestCloseReleasesEverything: after a job's communicators close, a
// failed one included, nothing of them is left in the process: no
// listener (TCP or shared-memory socket) once Close returns, no mapping of
// a shared-memory segment, and once the control server is gone too, no
// descriptor and no goroutine that the job made. A new job with the same
// id then starts as the first did.
func TestCloseReleasesEverything(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n = 3
	jobID := "reuse-" + t.Name() // every round's
	before := takeResources(t)
	for round := range 3 {
		failed := round == 1
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			j := newJobWithID(t, n, 0, jobID)
			j.t = t
			errs := j.each(func(c *hccl.Comm) error {
				if failed && c.Rank() == 2 {
					return allGatherF32(4)(ctx, c) // a mismatch: the job aborts
				}
				return allReduceF32(4, hccl.Sum)(ctx, c)
			})
			checkRound(ctx, t, j, failed, errs)

			// The probe must see what the job holds, or its silence
			// after Close would prove nothing. An aborted job has closed
			// its listeners already; its links keep their memory until
			// Close.
			shmLinks := 0
			for _, c := range j.comms {
				for _, l := range c.Links() {
					if l.Transport == "shm" {
						shmLinks++
					}
				}
			}
			open := takeResources(t).since(before)
			if shmLinks == 0 || len(open.shmMaps) == 0 || (!failed && len(open.listeners) < n) || len(open.fds) == 0 || len(open.goroutines) == 0 {
				t.Fatalf("a running job of %d ranks shows as %d shared-memory links, %d listeners, %d shared-memory mappings, %d descriptors, %d goroutines: the check would be blind",
					n, shmLinks, len(open.listeners), len(open.shmMaps), len(open.fds), len(open.goroutines))
			}
			closeAll(t, j, 10*time.Second)
			// Close is synchronous: what a rank owns is gone when it
			// returns. The control server (still up) keeps its listener.
			left := takeResources(t).since(before)
			delete(left.listeners, "tcp "+j.server.Addr())
			if len(left.listeners)+len(left.shmMaps) > 0 {
				t.Errorf("after Close:%s", resources{listeners: left.listeners, shmMaps: left.shmMaps})
			}
		})
		if t.Failed() {
			return
		}
		// The subtest's cleanup closed the control server: now every
		// descriptor and goroutine of the job must go. Goroutines may take
		// a moment to return after what woke them.
		var left resources
		deadline := time.Now().Add(5 * time.Second)
		for {
			left = takeResources(t).since(before)
			if left.empty() || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !left.empty() {
			t.Fatalf("round %d: after Close and the control server's end:%s", round, left)
		}
	}
}

// closeAll closes every rank's communicator and checks that Close returns
// nil within d. One that hangs ends the test binary with every stack, from
// a goroutine of its own: failing the test, or panicking on its goroutine,
// would run the cleanups, whose Close would hang as well.
func closeAll(t *testing.T, j *testJob, d time.Duration) {
	t.Helper()
	errs := make(chan error, len(j.comms))
	for r, c := range j.comms {
		go func() {
			if err := c.Close(); err != nil {
				errs <- fmt.Errorf("rank %d: Close: %w", r, err)
				return
			}
			errs <- nil
		}()
	}
	timeout := time.After(d)
	for range j.comms {
		select {
		case err := <-errs:
			if err != nil {
				t.Error(err)
			}
		case <-timeout:
			debug.SetTraceback("all")
			go panic(fmt.Sprintf("%s: a rank's Close has not returned after %v", t.Name(), d))
			select {}
		}
	}
}

// checkRound checks what the ranks' calls returned: all nil, or for the
// failed round ErrMismatch on some rank and ErrMismatch or ErrAborted on
// the others (a rank that finished first must fail its next call).
func checkRound(ctx context.Context, t *testing.T, j *testJob, failed bool, errs []error) {
	t.Helper()
	mismatches := 0
	for r, err := range errs {
		switch {
		case !failed:
			if err != nil {
				t.Errorf("rank %d: AllReduce: %v", r, err)
			}
		case err == nil:
			if err := barrier(ctx, j.comms[r]); !errors.Is(err, hccl.ErrAborted) && !errors.Is(err, hccl.ErrMismatch) {
				t.Errorf("rank %d: succeeded, and its next call returned %v, want ErrAborted or ErrMismatch", r, err)
			}
		case errors.Is(err, hccl.ErrMismatch):
			mismatches++
		case !errors.Is(err, hccl.ErrAborted):
			t.Errorf("rank %d: %v, want ErrMismatch or ErrAborted", r, err)
		}
	}
	if failed && mismatches == 0 {
		t.Errorf("no rank reported ErrMismatch: %v", errs)
	}
}

// resources is what of this process a job can leave behind, each item
// described for a failure message.
type resources struct {
	fds        map[string]string // descriptor number and target -> description
	goroutines map[int]string    // id -> stack
	maxG       int               // the highest goroutine id seen
	shmMaps    map[string]string // /proc/self/maps line of a file in /dev/shm
	listeners  map[string]string // "tcp 127.0.0.1:port" or "unix @name" -> its descriptor
}

// takeResources reads the process's descriptors, goroutines, mappings and
// listening sockets from /proc and the Go runtime.
func takeResources(t *testing.T) resources {
	t.Helper()
	r := resources{fds: map[string]string{}, goroutines: map[int]string{}, shmMaps: map[string]string{}, listeners: map[string]string{}}
	sockets := map[string]string{} // socket inode -> descriptor
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // the directory's own descriptor, closed by now
		}
		r.fds[e.Name()+" "+target] = "fd " + e.Name() + " -> " + target
		if ino, ok := strings.CutPrefix(target, "socket:["); ok {
			sockets[strings.TrimSuffix(ino, "]")] = e.Name()
		}
	}

	buf := make([]byte, 1<<20)
	for len(buf) == goruntime.Stack(buf, true) {
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf[:goruntime.Stack(buf, true)]), "\n\n") {
		var id int
		if _, err := fmt.Sscanf(g, "goroutine %d ", &id); err == nil {
			r.goroutines[id] = g
			r.maxG = max(r.maxG, id)
		}
	}

	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(maps), "\n") {
		// start-end perms offset dev inode path
		if fs := strings.Fields(line); len(fs) >= 6 && strings.HasPrefix(fs[5], shm.DefaultDir+"/") {
			r.shmMaps[line] = "mapping " + line
		}
	}

	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue // no IPv6
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(line)
			if len(fs) < 10 || fs[3] != "0A" { // TCP_LISTEN
				continue
			}
			if fd, ok := sockets[fs[9]]; ok {
				r.listeners["tcp "+procNetAddr(t, fs[1])] = fd
			}
		}
	}
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// Num RefCount Protocol Flags Type St Inode Path
		fs := strings.Fields(line)
		if len(fs) < 8 || fs[3] != "00010000" { // __SO_ACCEPTCON: listening
			continue
		}
		if fd, ok := sockets[fs[6]]; ok {
			r.listeners["unix "+fs[7]] = fd
		}
	}
	return r
}

// procNetAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080".
func procNetAddr(t *testing.T, s string) string {
	t.Helper()
	h, p, _ := strings.Cut(s, ":")
	ip, err1 := hex.DecodeString(h)
	port, err2 := strconv.ParseUint(p, 16, 16)
	if err := errors.Join(err1, err2); err != nil || len(ip)%4 != 0 {
		t.Fatalf("/proc/net/tcp address %q: %v", s, err)
	}
	for i := 0; i < len(ip); i += 4 { // each 32-bit word is in host order
		binary.BigEndian.PutUint32(ip[i:], binary.LittleEndian.Uint32(ip[i:]))
	}
	return net.JoinHostPort(net.IP(ip).String(), strconv.Itoa(int(port)))
}

// since is what r holds that before did not: descriptors and mappings not
// there then, goroutines started after it.
func (r resources) since(before resources) resources {
	d := resources{fds: map[string]string{}, goroutines: map[int]string{}, shmMaps: map[string]string{}, listeners: map[string]string{}}
	for k, v := range r.fds {
		if _, ok := before.fds[k]; !ok {
			d.fds[k] = v
		}
	}
	for id, g := range r.goroutines {
		if id > before.maxG {
			d.goroutines[id] = g
		}
	}
	for k, v := range r.shmMaps {
		if _, ok := before.shmMaps[k]; !ok {
			d.shmMaps[k] = v
		}
	}
	for k, v := range r.listeners {
		if _, ok := before.listeners[k]; !ok {
			d.listeners[k] = v
		}
	}
	return d
}

func (r resources) empty() bool {
	return len(r.fds)+len(r.goroutines)+len(r.shmMaps)+len(r.listeners) == 0
}

// String lists the items, a few of each kind.
func (r resources) String() string {
	var b strings.Builder
	list := func(kind string, items []string) {
		if len(items) == 0 {
			return
		}
		slices.Sort(items)
		fmt.Fprintf(&b, "\n%d %s:", len(items), kind)
		for i, it := range items {
			if i == 5 {
				fmt.Fprintf(&b, "\n\t...")
				break
			}
			fmt.Fprintf(&b, "\n\t%s", strings.ReplaceAll(it, "\n", "\n\t\t"))
		}
	}
	var ls []string
	for k, fd := range r.listeners {
		ls = append(ls, k+" (fd "+fd+")")
	}
	list("listeners", ls)
	list("shared-memory mappings", slices.Collect(maps.Values(r.shmMaps)))
	list("descriptors", slices.Collect(maps.Values(r.fds)))
	list("goroutines", slices.Collect(maps.Values(r.goroutines)))
	return b.String()
}
