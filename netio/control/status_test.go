package control

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// waitStatus polls the server's status until pred holds for it.
func (j *testJob) waitStatus(d time.Duration, what string, pred func([]RankStatus) bool) []RankStatus {
	j.t.Helper()
	end := time.Now().Add(d)
	for {
		st := j.s.Status()
		if pred(st) {
			return st
		}
		if time.Now().After(end) {
			j.t.Fatalf("status never showed %s within %v: %+v", what, d, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestProgressThroughHeartbeats: progress set with SetProgress reaches
// the server with the heartbeats alone, and the other ranks see it in
// their Status.
func TestProgressThroughHeartbeats(t *testing.T) {
	const n = 3
	ctx := testCtx(t, 10*time.Second)
	j := newJob(t, n, nil)
	clients := make([]*Client, n)
	for r := range n {
		clients[r] = j.dial(ctx, r)
	}
	for _, step := range []struct {
		seq    uint64
		inCall bool
	}{{1, true}, {1, false}, {2, true}, {1<<63 - 3, true}} {
		start := time.Now()
		for r, c := range clients {
			c.SetProgress(step.seq+uint64(r), step.inCall)
		}
		j.waitStatus(time.Second, fmt.Sprintf("call %d in=%v", step.seq, step.inCall), func(st []RankStatus) bool {
			for r, s := range st {
				if s.Seq != step.seq+uint64(r) || s.InCall != step.inCall || s.State != Alive {
					return false
				}
			}
			return true
		})
		t.Logf("seq %d in=%v at the server after %v (heartbeat %v)", step.seq, step.inCall, time.Since(start), testHeartbeat)
	}
	if clients[0].Heartbeat() != testHeartbeat || j.s.Heartbeat() != testHeartbeat {
		t.Fatalf("heartbeat: client %v, server %v, configured %v", clients[0].Heartbeat(), j.s.Heartbeat(), testHeartbeat)
	}
	// Rank 0's view through the wire is the server's.
	st, err := clients[0].Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for r, s := range st {
		if s.Rank != r || s.State != Alive || s.Seq != 1<<63-3+uint64(r) || !s.InCall {
			t.Fatalf("rank %d: %+v", r, s)
		}
		if s.SilentFor > 3*testHeartbeat {
			t.Errorf("rank %d silent for %v while heartbeating every %v", r, s.SilentFor, testHeartbeat)
		}
	}
}

// TestStatusCarriesOwnProgress: with heartbeats far apart, a Status
// request still reports the caller's progress of this instant, and the
// progress of a rank that has not sent a beat yet is still the initial
// one (so the request is what carried the caller's).
func TestStatusCarriesOwnProgress(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	const beat = 5 * time.Second
	j := newJob(t, 2, func(c *ServerConfig) { c.HeartbeatInterval, c.LostAfter = beat, 4*beat })
	start := time.Now()
	a, b := j.dial(ctx, 0), j.dial(ctx, 1)
	b.SetProgress(3, true)
	for _, seq := range []uint64{7, 8, 9} {
		a.SetProgress(seq, seq%2 == 1)
		st, err := a.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st[0].Seq != seq || st[0].InCall != (seq%2 == 1) || st[0].State != Alive {
			t.Fatalf("own entry %+v, want seq %d", st[0], seq)
		}
		if st[0].SilentFor > 100*time.Millisecond {
			t.Fatalf("own entry silent for %v right after a request", st[0].SilentFor)
		}
		if time.Since(start) < beat-time.Second && (st[1].Seq != 0 || st[1].InCall) {
			t.Fatalf("rank 1 reported %+v without sending anything", st[1])
		}
		if s := j.s.Status()[0]; s.Seq != seq {
			t.Fatalf("server's status of rank 0: %+v", s)
		}
	}
}

// TestStuckVersusLost is the timeout case of a job of 5 at call #5: rank
// 0 waits in it; rank 1, a real process, finished call #4 and was then
// SIGSTOPped (no beats, socket open); rank 2 finished call #4 and
// heartbeats but never advances; rank 3 never came; rank 4 left after
// call #3. Stragglers must name 1 LOST, 2 STUCK, 3 NOT JOINED, 4 LEFT.
func TestStuckVersusLost(t *testing.T) {
	// Beats far enough apart that a loaded 2-core machine does not make
	// the healthy rank look silent (2 beats = 500 ms), LostAfter long
	// enough to see the stopped rank silent before it is declared lost.
	const beat, lostAfter = 250 * time.Millisecond, 3 * time.Second
	ctx := testCtx(t, 20*time.Second)
	j := newJob(t, 5, func(c *ServerConfig) { c.HeartbeatInterval, c.LostAfter = beat, lostAfter })
	rank0, rank2, rank4 := j.dial(ctx, 0), j.dial(ctx, 2), j.dial(ctx, 4)
	rank4.SetProgress(3, false)
	if _, err := rank4.Status(ctx); err != nil { // carries rank 4's progress
		t.Fatal(err)
	}
	rank4.Close()
	rank2.SetProgress(4, false)
	child, _ := startChild(t, "client", envAddr+"="+j.s.Addr(), envKey+"="+wire.EncodeKey(j.key),
		envRank+"=1", envSize+"=5", envSeq+"=4")
	if _, err := rank0.Get(ctx, "child/1"); err != nil {
		t.Fatal(err)
	}
	j.waitStatus(5*beat, "ranks 1 and 2 after call 4", func(st []RankStatus) bool {
		return st[1].Seq == 4 && st[2].Seq == 4 && st[4].State == Left
	})
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	rank0.SetProgress(5, true)
	time.Sleep(4 * beat)

	want := []struct {
		rank int
		kind StragglerKind
		text string
	}{
		{1, StragglerLost, ""}, // set from rank 1's state below
		{2, StragglerStuck, "rank 2 STUCK (alive, last call #4)"},
		{3, StragglerNotJoined, "rank 3 NOT JOINED (never connected in "},
		{4, StragglerLeft, "rank 4 LEFT (closed after call #3)"},
	}
	check := func(st []RankStatus, view string) string {
		t.Helper()
		want[0].text = "rank 1 LOST (silent for "
		if st[1].State == Lost {
			want[0].text = "rank 1 LOST (disconnected, silent for "
		}
		got := Stragglers(st, 5, beat)
		msg := FormatStragglers(got)
		t.Logf("%s, %v after SIGSTOP: %s", view, time.Since(stopped).Round(time.Millisecond), msg)
		if len(got) != len(want) {
			t.Fatalf("%s: stragglers %+v, want ranks 1-4", view, got)
		}
		for i, w := range want {
			if got[i].Rank != w.rank || got[i].Kind != w.kind || !contains(got[i].String(), w.text) ||
				(w.rank == 1 && !contains(got[i].String(), ", last call #4)")) {
				t.Fatalf("%s: straggler %d is %q (%+v), want %v %q", view, i, got[i], got[i], w.kind, w.text)
			}
		}
		return msg
	}
	st, err := rank0.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(st, "rank 0's view")
	if st[1].State != Alive && time.Since(stopped) < lostAfter {
		t.Fatalf("stopped rank %v before LostAfter", st[1].State)
	}
	if st[1].SilentFor < 3*beat {
		t.Fatalf("stopped rank silent for only %v", st[1].SilentFor)
	}
	check(j.s.Status(), "the server's view")

	// After LostAfter the server declares it lost: still LOST, now
	// "disconnected", and the last call it reported is kept.
	j.waitEvent(lostAfter+2*time.Second, "RankLost for the stopped rank", func(e Event) bool {
		l, ok := e.(RankLost)
		return ok && l.Rank == 1
	})
	st, err = rank0.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st[1].State != Lost || st[1].Seq != 4 {
		t.Fatalf("rank 1 after LostAfter: %+v", st[1])
	}
	if msg := check(st, "rank 0's view after LostAfter"); !contains(msg, "rank 1 LOST (disconnected, silent for ") {
		t.Fatalf("lost rank not reported as disconnected: %s", msg)
	}
}

// TestStatusWhileWaiting: a Status round trip is answered while a Get
// and a Barrier of the same client wait, and fails once the job is
// aborted.
func TestStatusWhileWaiting(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	j := newJob(t, 2, nil)
	a := j.dial(ctx, 0)
	waiting := make(chan error, 2)
	go func() { _, err := a.Get(ctx, "never"); waiting <- err }()
	go func() { waiting <- a.Barrier(ctx, "never") }()
	for range 20 {
		st, err := a.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st[0].State != Alive || st[1].State != NotJoined {
			t.Fatalf("status %+v", st)
		}
	}
	j.s.Abort(LauncherOrigin, "test over")
	for range 2 {
		if err := <-waiting; !errors.As(err, new(*AbortError)) {
			t.Fatalf("waiting call: %v", err)
		}
	}
	if _, err := a.Status(ctx); !errors.As(err, new(*AbortError)) {
		t.Fatalf("Status after abort: %v", err)
	}
}

// TestStatusLargeJob: a job of MaxStatusRanks ranks, two of them joined,
// gets its whole status in one reply.
func TestStatusLargeJob(t *testing.T) {
	const n = MaxStatusRanks
	ctx := testCtx(t, 20*time.Second)
	j := newJob(t, n, nil)
	first, last := j.dial(ctx, 0), j.dial(ctx, n-1)
	last.SetProgress(1<<40, true)
	start := time.Now()
	st, err := first.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status of %d ranks in %v", n, time.Since(start))
	notJoined := 0
	for r, s := range st {
		if s.Rank != r {
			t.Fatalf("entry %d names rank %d", r, s.Rank)
		}
		if s.State == NotJoined {
			notJoined++
		}
	}
	if notJoined != n-2 || st[0].State != Alive || st[n-1].State != Alive {
		t.Fatalf("%d not joined, rank 0 %v, rank %d %v", notJoined, st[0].State, n-1, st[n-1].State)
	}
	if _, err := last.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if s := j.s.Status()[n-1]; s.Seq != 1<<40 || !s.InCall {
		t.Fatalf("last rank %+v", s)
	}
	// The straggler report of such a job stays short.
	if msg := FormatStragglers(Stragglers(st, 1, testHeartbeat)); len(msg) > 2000 {
		t.Fatalf("report of %d bytes: %.200s...", len(msg), msg)
	} else {
		t.Logf("report: %.300s", msg)
	}
}
