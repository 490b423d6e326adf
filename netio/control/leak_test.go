package control

import (
	"runtime"
	"testing"
	"time"
)

// TestNoGoroutineLeak runs a small job to the end, including a rank that
// dies and a client still waiting when the server closes, and checks that
// every goroutine of server and clients has exited.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		ctx := testCtx(t, 10*time.Second)
		j := newJob(t, 3, nil)
		a, b, c := j.dial(ctx, 0), j.dial(ctx, 1), j.dial(ctx, 2)
		if err := a.Put(ctx, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Get(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		c.conn.Close()
		j.waitEvent(time.Second, "RankLost", func(e Event) bool { _, ok := e.(RankLost); return ok })
		waiting := make(chan error, 1)
		go func() { _, err := a.Get(ctx, "never"); waiting <- err }()
		time.Sleep(20 * time.Millisecond)
		j.s.Close()
		<-waiting
		a.Close()
		b.Close()
		c.Close()
	}()
	end := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(end) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
