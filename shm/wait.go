package shm

import (
	"context"
	goruntime "runtime"
	"sync/atomic"
	"time"
)

// WakePeriod bounds how long a waiter sleeps in the kernel without looking
// at its context and at the ring's closed flag. A wake-up costs a few
// microseconds, so 20 per second per sleeping rank is noise even with eight
// ranks on two cores, and a cancelled context is noticed within 50 ms. A
// dead peer is usually noticed sooner: the liveness watcher (Watch) aborts
// the ring, which wakes the sleeper at once.
const WakePeriod = 50 * time.Millisecond

// spinFor is how long a waiter polls before it sleeps (nanoseconds). A
// commit by a peer running on another core shows up within a fraction of a
// microsecond, while a sleep costs a futex round trip and, worse, the
// scheduler's wake-up latency: 40-50 us to a sleeping process here. So when
// every rank of the host has a core of its own, waiting a while awake is
// far cheaper than sleeping. On an oversubscribed host the peer may need
// this very core to make progress, so the spin must stay short there. The
// process that owns the ranks decides (SetSpin); the default is the short,
// always-safe one.
var spinFor atomic.Int64

// DefaultSpin is the spin of a process that never called SetSpin.
const DefaultSpin = 4 * time.Microsecond

func init() { spinFor.Store(int64(DefaultSpin)) }

// SetSpin sets how long waiters of this process poll before they sleep.
// The spin yields to the process's other goroutines between checks.
func SetSpin(d time.Duration) { spinFor.Store(int64(max(d, 0))) }

// await returns when the consumer (consumer true) may find data, or the
// producer space, or the ring was closed or aborted, or ctx is done. The
// caller re-checks its condition after await returns nil. While spinning,
// any progress of the other side ends the wait; once asleep, the other
// side wakes it only when its counter (head for a consumer, tail for a
// producer) reaches want, or on close. The periodic wake bounds a wrong
// want to a delay, never a hang.
func (r *Ring) await(ctx context.Context, consumer bool, want uint64) error {
	ev, waiting, wantWord, other := r.spaceEv, r.prodWaiting, r.prodWant, r.tail
	if consumer {
		ev, waiting, wantWord, other = r.dataEv, r.consWaiting, r.consWant, r.head
	}
	// A call made with a context that is already done fails at once
	// rather than after a spin.
	if err := ctx.Err(); err != nil {
		return err
	}
	var start time.Time
	spin := time.Duration(spinFor.Load())
	for i := 0; ; i++ {
		if r.ready(consumer) || r.closed.Load() != 0 || r.local.Load() {
			return nil
		}
		if i&7 == 7 {
			if i == 7 {
				start = time.Now()
			} else if time.Since(start) > spin {
				break
			}
			goruntime.Gosched()
		}
	}
	wantWord.Store(want)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Read the event word before announcing the sleep and re-checking:
		// a wake after the re-check bumps the word, so the futex wait
		// returns at once instead of sleeping through it.
		seen := ev.Load()
		waiting.Store(1)
		if other.Load() >= want || r.closed.Load() != 0 || r.local.Load() {
			waiting.Store(0)
			return nil
		}
		futexSleep(ev, seen, WakePeriod)
		waiting.Store(0)
		if ev.Load() != seen || other.Load() >= want {
			return nil
		}
		if r.ready(consumer) && time.Since(start) > WakePeriod {
			// Progress, but less than wanted, for a whole period: let
			// the caller take what there is.
			return nil
		}
	}
}

// ready reports whether the side can proceed at all, reading the other
// side's counter.
func (r *Ring) ready(consumer bool) bool {
	if consumer {
		return r.head.Load() != r.rTail
	}
	return r.wHead-r.tail.Load() < r.cap
}
