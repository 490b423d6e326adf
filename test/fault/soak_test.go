package fault

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSoak1000 is the soak of the normal suite: 4 ranks, 1,000 random
// collectives, every result checked.
func TestSoak1000(t *testing.T) {
	soak(t, 1000, 60*time.Second)
}

// TestSoakFull is issue 7's soak: 20,000 random collectives. It runs with
// HCCL_SOAK=1, or when -run names it (-run SoakFull).
func TestSoakFull(t *testing.T) {
	if os.Getenv("HCCL_SOAK") != "1" && !strings.Contains(flag.Lookup("test.run").Value.String(), "SoakFull") {
		t.Skip("the 20,000-call soak runs with HCCL_SOAK=1 or -run SoakFull")
	}
	soak(t, 20000, 10*time.Minute)
}

// TestSoakChecksCatch proves that the soak's checks can fail: the ranks
// spoil one result on purpose and must report it as wrong (exit 8).
func TestSoakChecksCatch(t *testing.T) {
	seed := testSeed(t)
	j := startJob(t, nil, nil, "-np", "4", "--grace", "2s", faultProg, "-mode", "soak", "-calls", "200",
		"-seed", strconv.FormatUint(seed, 10), "-corrupt-from", "50")
	rs := j.ranks(4, 30*time.Second)
	j.wait(60 * time.Second)
	j.checkClean(rs)
	errs := j.errors()
	wrong := 0
	for _, e := range errs {
		if e.class == "wrong" && strings.Contains(e.msg, "wrong result") {
			wrong++
		}
	}
	if j.code != 8 || wrong == 0 {
		t.Fatalf("exit code %d, %d wrong-result reports; want 8 and at least one\noutput:\n%s", j.code, wrong, j.output())
	}
	t.Logf("caught: %s", errs[firstKey(errs)].msg)
}

func firstKey(m map[int]errorLine) int {
	for k := range m {
		return k
	}
	return -1
}

// sampleLine is one "rank R sample ..." line.
type sampleLine struct {
	calls, goroutines, fds, rss, heap, live int
}

var sampleRE = regexp.MustCompile(`^rank (\d+) sample calls=(\d+) goroutines=(\d+) fds=(\d+) rss_kib=(\d+) heap_kib=(\d+) live_kib=(\d+) ms=(\d+)$`)

func soak(t *testing.T, calls int, deadline time.Duration) {
	seed := testSeed(t)
	const np = 4
	j := startJob(t, nil, nil, "-np", strconv.Itoa(np), faultProg, "-mode", "soak",
		"-calls", strconv.Itoa(calls), "-seed", strconv.FormatUint(seed, 10))
	rs := j.ranks(np, 30*time.Second)
	j.ready(np, 60*time.Second)
	j.noteRunning(rs)
	j.wait(deadline)
	j.checkClean(rs)
	if j.code != 0 {
		t.Fatalf("exit code %d, summary %q\nerrors: %v\noutput (tail):\n%s", j.code, j.summary(), j.errors(), tail(j.output(), 40))
	}
	_, done := j.matches(regexp.MustCompile(`^rank (\d+) done soak calls=(\d+) bytes=(\d+) ms=(\d+) kinds=(\S+)$`))
	if len(done) != np {
		t.Fatalf("%d ranks reported the end of the soak, want %d\noutput:\n%s", len(done), np, tail(j.output(), 40))
	}
	t.Logf("seed %d: %d calls in %v; rank %s moved %s bytes; %s", seed, calls, j.elapsed.Round(time.Millisecond), done[0][1], done[0][3], done[0][5])

	_, ms := j.matches(sampleRE)
	byRank := make([][]sampleLine, np)
	for _, m := range ms {
		r, _ := strconv.Atoi(m[1])
		var s sampleLine
		for i, p := range []*int{&s.calls, &s.goroutines, &s.fds, &s.rss, &s.heap, &s.live} {
			*p, _ = strconv.Atoi(m[i+2])
		}
		byRank[r] = append(byRank[r], s)
	}
	for r, ss := range byRank {
		if len(ss) != calls/1000+1 {
			t.Errorf("rank %d: %d samples, want %d", r, len(ss), calls/1000+1)
			continue
		}
		var b strings.Builder
		for _, s := range ss {
			fmt.Fprintf(&b, " %d:%d/%d/%d/%d", s.calls, s.goroutines, s.fds, s.rss>>10, s.live>>10)
		}
		t.Logf("rank %d calls:goroutines/fds/RSS MiB/live heap MiB:%s", r, b.String())
		// The first call opens the links (a goroutine, fds); from the
		// first sample after it on, everything must stay flat.
		ref, last := ss[1], ss[len(ss)-1]
		for _, s := range ss[1:] {
			if s.goroutines > ref.goroutines+2 || s.fds > ss[0].fds+1 {
				t.Errorf("rank %d at call %d: %d goroutines, %d fds; at call %d %d and at the start %d fds", r, s.calls, s.goroutines, s.fds, ref.calls, ref.goroutines, ss[0].fds)
			}
		}
		if last.live > ref.live+4<<10 {
			t.Errorf("rank %d: live heap grew from %d KiB (call %d) to %d KiB (call %d)", r, ref.live, ref.calls, last.live, last.calls)
		}
		if last.rss > ref.rss+48<<10 {
			t.Errorf("rank %d: RSS grew from %d KiB (call %d) to %d KiB (call %d)", r, ref.rss, ref.calls, last.rss, last.calls)
		}
	}
}

// testSeed is FAULTSUITE_SEED or the clock, logged so a failure can be
// replayed.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FAULTSUITE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("FAULTSUITE_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (FAULTSUITE_SEED=%d replays it)", seed, seed)
	return seed
}

func tail(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}
