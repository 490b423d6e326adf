package shm

import (
	"context"
	goruntime "runtime"
	"time"
)

// WakePeriod bounds how long a waiter sleeps in the kernel without looking
// at its context and at the ring's closed flag. A wake-up costs a few
// microseconds, so 20 per second per sleeping rank is noise even with eight
// ranks on two cores, and a cancelled context is noticed within 50 ms. A
// dead peer is usually noticed sooner: the liveness watcher (Watch) aborts
// the ring, which wakes the sleeper at once.
const WakePeriod = 50 * time.Millisecond

// spinFor is how long a waiter polls before it sleeps. A commit by a peer
// running on the other core shows up within a fraction of a microsecond, and
// a futex round trip costs several, so a short spin saves the syscalls in
// a tight exchange. It must stay short: on an oversubscribed machine the
// peer may need this very core to make progress, which is why the spin
// yields between checks.
const spinFor = 4 * time.Microsecond

// await returns when the consumer (consumer true) may find data, or the
// producer space, or the ring was closed or aborted, or ctx is done. The
// caller re-checks its condition after await returns nil.
func (r *Ring) await(ctx context.Context, consumer bool) error {
	ev, waiting := r.spaceEv, r.prodWaiting
	if consumer {
		ev, waiting = r.dataEv, r.consWaiting
	}
	// A call made with a context that is already done fails at once
	// rather than after a spin.
	if err := ctx.Err(); err != nil {
		return err
	}
	var start time.Time
	for i := 0; ; i++ {
		if r.ready(consumer) || r.closed.Load() != 0 || r.local.Load() {
			return nil
		}
		if i&7 == 7 {
			if i == 7 {
				start = time.Now()
			} else if time.Since(start) > spinFor {
				break
			}
			goruntime.Gosched()
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Read the event word before announcing the sleep and re-checking:
		// a commit after the re-check bumps the word, so the futex wait
		// returns at once instead of sleeping through the commit.
		seen := ev.Load()
		waiting.Store(1)
		if r.ready(consumer) || r.closed.Load() != 0 || r.local.Load() {
			waiting.Store(0)
			return nil
		}
		futexSleep(ev, seen, WakePeriod)
		waiting.Store(0)
		if ev.Load() != seen || r.ready(consumer) {
			return nil
		}
	}
}

// ready reports whether the side can proceed, reading the other side's
// counter.
func (r *Ring) ready(consumer bool) bool {
	if consumer {
		return r.head.Load() != r.rTail
	}
	return r.wHead-r.tail.Load() < r.cap
}
