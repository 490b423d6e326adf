package fault

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio"
)

// TestIntruders: while a job runs its AllReduce loop (over TCP, so that
// the ranks' data ports listen too), strangers connect to every listening
// port of the job, the control port and the data ports: with a wrong key,
// with random bytes, with the handshake's magic followed by garbage, as a
// port scan (connect, close), and silently (held open until the job ends).
// The strangers are refused, and the job is undisturbed: every rank
// finishes the same number of checked AllReduces and hcclrun exits 0.
// Another user attacks the shared-memory sockets in shmintruder_test.go.
func TestIntruders(t *testing.T) {
	j := startJob(t, []string{"HCCL_SHM_DISABLE=1"}, nil, args(faultProg, "-mode", "loop", "-count", "4096", "-for", "8s")...)
	rs := j.ranks(4, 30*time.Second)
	j.ready(4, 60*time.Second)
	j.noteRunning(rs)
	key := j.jobKey(rs[0])
	var targets []string
	for _, l := range j.running.listeners {
		if l.port > 0 {
			targets = append(targets, l.addr)
		}
	}
	if !strings.Contains(strings.Join(targets, " "), rs[0].control) {
		t.Fatalf("the control port %s is not among the job's listeners %v", rs[0].control, targets)
	}
	t.Logf("attacking %d ports: %v", len(targets), targets)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wrongKey, err := wire.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		refusal = map[string]time.Duration{} // the longest the job took to drop each kind of garbage
		held    []net.Conn
		wg      sync.WaitGroup
	)
	for _, addr := range targets {
		purpose := wire.PurposeData
		if addr == rs[0].control {
			purpose = wire.PurposeControl
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				_, _, err := netio.Dial(ctx, addr, wrongKey, wire.Hello{Purpose: purpose, Rank: 1})
				if !errors.Is(err, wire.ErrAuth) {
					t.Errorf("%s: dial with a wrong key: %v, want ErrAuth", addr, err)
				}
			}
			garbage := func(prefix string, n int) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Errorf("%s: %v", addr, err)
					return
				}
				defer c.Close()
				b := make([]byte, n)
				rand.Read(b)
				copy(b, prefix)
				start := time.Now()
				c.Write(b)
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				// Whatever the job answers, it must hang up.
				_, err = c.Read(make([]byte, 64<<10))
				for err == nil {
					_, err = c.Read(make([]byte, 64<<10))
				}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Errorf("%s: %q+%d random bytes: still connected after 5s", addr, prefix, n)
					return
				}
				kind := fmt.Sprintf("%q+%d bytes", prefix, n)
				mu.Lock()
				refusal[kind] = max(refusal[kind], time.Since(start))
				mu.Unlock()
			}
			for _, n := range []int{16, 4096, 256 << 10} {
				garbage("", n)
			}
			// The magic and more than a whole handshake of garbage (a
			// shorter piece is a slow peer: dropped at the handshake
			// timeout, 10 s).
			for _, n := range []int{4096, 256 << 10} {
				garbage("HCHS\x01", n)
			}
			for range 20 {
				if c, err := net.Dial("tcp", addr); err == nil {
					c.Close()
				}
			}
			for range 5 {
				if c, err := net.Dial("tcp", addr); err == nil {
					mu.Lock()
					held = append(held, c)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-j.exited:
		t.Fatalf("the job ended before the attacks did; make it run longer")
	default:
	}
	j.wait(60 * time.Second)
	for _, c := range held {
		c.Close()
	}
	j.checkClean(rs)
	j.checkKeyHidden(key)

	_, done := j.matches(regexp.MustCompile(`^rank (\d+) done iters=(\d+)$`))
	iters := map[string]bool{}
	for _, m := range done {
		iters[m[2]] = true
	}
	if j.code != 0 || len(done) != 4 || len(iters) != 1 || len(j.errors()) > 0 {
		t.Fatalf("exit code %d, %d ranks done with iterations %v, errors %v; want 0, 4 ranks, one count, none\noutput:\n%s",
			j.code, len(done), iters, j.errors(), j.output())
	}
	var logged []string
	for _, l := range strings.Split(j.output(), "\n") {
		if strings.HasPrefix(l, "[stderr]") {
			logged = append(logged, l)
		}
	}
	t.Logf("job done (%s AllReduces per rank) in %v; hcclrun stderr has %d lines, e.g. %q", done[0][2], j.elapsed.Round(time.Millisecond), len(logged), first(logged))
	for k, d := range refusal {
		t.Logf("garbage %s dropped within %v", k, d.Round(time.Millisecond))
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// TestSilentConnectionsAtStartup: before the ranks join (they wait a second
// in a shell wrapper), strangers open connections to the control port and
// say nothing, more than the listener's 256 handshakes in progress. They
// must not keep the ranks out (until netio commit 4ad1ead they did: every
// rank's Init failed).
func TestSilentConnectionsAtStartup(t *testing.T) {
	for _, tc := range []struct{ conns int }{{300}, {1000}} {
		t.Run(fmt.Sprint(tc.conns), func(t *testing.T) {
			wrapper := `echo "rank $HCCL_RANK start pid=$$ control=$HCCL_CONTROL_ADDR job=$HCCL_JOB_ID"; sleep 1; exec "$0" "$@"`
			j := startJob(t, nil, nil, args("sh", "-c", wrapper, faultProg, "-mode", "loop", "-count", "4096", "-for", "1s")...)
			addr := j.control(30 * time.Second)
			var held []net.Conn
			for range tc.conns {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatalf("connection %d: %v", len(held), err)
				}
				held = append(held, c)
			}
			select {
			case <-j.exited:
				t.Fatalf("the job ended before the connections were open\n%s", j.output())
			default:
			}
			if _, ready := j.matches(readyRE); len(ready) > 0 {
				t.Fatalf("a rank joined before the %d connections were open; the case proves nothing", tc.conns)
			}
			j.wait(60 * time.Second)
			for _, c := range held {
				c.Close()
			}
			j.checkClean(j.ranks(4, time.Second))
			_, done := j.matches(regexp.MustCompile(`^rank (\d+) done iters=(\d+)$`))
			if j.code != 0 || len(done) != 4 {
				t.Fatalf("with %d silent connections held: exit code %d, %d ranks done; want 0 and 4\n%s", len(held), j.code, len(done), j.output())
			}
			t.Logf("%d silent connections held: job done in %v", len(held), j.elapsed.Round(time.Millisecond))
		})
	}
}
