package shm

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hcclrun/hcclrun/internal/cpu"
)

// WakePeriod bounds how long a waiter sleeps in the kernel without looking
// at its context and at the ring's closed flag: the default of
// WaitPolicy.WakePeriod, and its least value. A wake-up costs a few
// microseconds, so 20 per second per sleeping rank is noise even with
// eight ranks on two cores, and a cancelled context is noticed within 50
// ms. A dead peer is usually noticed sooner: the liveness watcher (Watch)
// aborts the ring, which wakes the sleeper at once.
const WakePeriod = 50 * time.Millisecond

// CrowdWakePeriod is the wake period for a crowded host: there every
// periodic wake of every sleeping rank costs the others CPU time (a
// wake-up, and the Go runtime's system monitor polling for a millisecond
// after it), while a sleeper is still woken at once by its peer, by Close
// or Abort, and by its context (which a waiter of a long period registers
// to be woken by).
const CrowdWakePeriod = time.Second

// DefaultSpin is the spin of the zero WaitPolicy: short enough to be safe
// on a host with more ranks than cores, where a spinning waiter would take
// the core its peer needs.
const DefaultSpin = 4 * time.Microsecond

// WaitPolicy says how the waiters of one side of a ring wait for the
// other: they poll for Spin, yielding to the process's other goroutines
// between checks; then for Yield, giving the processor to any other
// runnable thread between checks (sched_yield); then they sleep in the
// futex, WakePeriod at most at a time, until the other side wakes them.
//
// Spinning is far cheaper than sleeping when every rank of the host has a
// core of its own: a commit by a peer on another core shows within a
// fraction of a microsecond, where a sleep costs a futex round trip and
// the scheduler's wake-up latency. On an oversubscribed host the peer may
// need this very core, and yielding hands it over for the price of a
// context switch (docs/measurements.md#spin-and-yield). The runtime
// chooses per communicator (runtime/transport/shmlink's Host.Wait); each
// side of a ring has its own, fixed when the side is opened (NewRing,
// OpenRing).
//
// The zero value is the default policy: DefaultSpin, no yield, and
// WakePeriod. Any other value is taken as it is, a zero WakePeriod meaning
// WakePeriod (and a shorter one raised to it), negative durations none.
type WaitPolicy struct {
	Spin, Yield, WakePeriod time.Duration
}

// resolved is p with its defaults filled in, as a ring keeps it: the
// waits read its fields as they are.
func (p WaitPolicy) resolved() WaitPolicy {
	if p == (WaitPolicy{}) {
		return WaitPolicy{Spin: DefaultSpin, WakePeriod: WakePeriod}
	}
	return WaitPolicy{Spin: max(p.Spin, 0), Yield: max(p.Yield, 0), WakePeriod: max(p.WakePeriod, WakePeriod)}
}

// await returns when the consumer (consumer true) may find data, or the
// producer space, or the ring was closed or aborted, or ctx is done. The
// caller re-checks its condition after await returns nil. While spinning,
// any progress of the other side ends the wait; once asleep, the other
// side wakes it only when its counter (head for a consumer, tail for a
// producer) reaches want, or on close. The periodic wake bounds a wrong
// want to a delay, never a hang.
func (r *Ring) await(ctx context.Context, consumer bool, want uint64) error {
	s := sleeper{ev: r.spaceEv, waiting: r.prodWaiting, wantWord: r.prodWant, counter: r.tail, want: want}
	if consumer {
		s = sleeper{ev: r.dataEv, waiting: r.consWaiting, wantWord: r.consWant, counter: r.head, want: want}
	}
	return r.wait(ctx, &s, func() bool { return r.ready(consumer) })
}

// sleeper says what a waiter sleeps on: the futex word ev, the flag that
// announces the sleep to the other side, and the other side's counter that
// must reach want. wantWord, when set, tells the other side that want.
// also, when set, is another condition that ends the sleep (a fast box
// posted), which the other side wakes the sleeper for whatever want says.
type sleeper struct {
	ev, waiting       *atomic.Uint32
	wantWord, counter *atomic.Uint64
	want              uint64
	also              func() bool
}

// wake wakes the other side asleep on ev if it announced its sleep in
// waiting (sleeper.waiting), taking the announcement back so that one
// wake-up is one system call. The caller has already published what the
// sleeper waits for, with an atomic store or add: that orders it before
// this load of waiting, as the sleeper's store of waiting comes before
// its last look.
//
// Inlined, it costs the hot paths (every commit, release and
// acknowledgement) one load when nobody sleeps; the rest is wakeSleeper.
func wake(waiting, ev *atomic.Uint32) {
	if waiting.Load() != 0 {
		wakeSleeper(waiting, ev)
	}
}

func wakeSleeper(waiting, ev *atomic.Uint32) {
	if waiting.CompareAndSwap(1, 0) {
		ev.Add(1)
		futexWakeUp(ev, 1)
	}
}

// wait spins while !progress() for the ring's Spin (WaitPolicy), then
// yields the processor between checks for its Yield (0 unless the host is
// oversubscribed), then sleeps until s's counter reaches its want, the
// ring closes or ctx ends. It returns nil
// when the caller should look again (which may also follow a period of
// progress short of the want), and ctx's error when ctx ended.
func (r *Ring) wait(ctx context.Context, s *sleeper, progress func() bool) error {
	// A call made with a context that is already done fails at once
	// rather than after a spin.
	if err := ctx.Err(); err != nil {
		return err
	}
	var start time.Time
	spin := r.policy.Spin
	for i := 0; ; i++ {
		if progress() || r.closed.Load() != 0 || r.local.Load() {
			return nil
		}
		cpu.Pause()
		if i&7 == 7 {
			if i == 7 {
				start = time.Now()
			} else if time.Since(start) > spin {
				break
			}
			cpu.YieldGoroutine()
		}
	}
	if d := r.policy.Yield; d > 0 {
		for yieldStart := time.Now(); time.Since(yieldStart) < d; {
			if progress() || r.closed.Load() != 0 || r.local.Load() {
				return nil
			}
			cpu.YieldGoroutine()
			Yield()
		}
	}
	if s.wantWord != nil {
		s.wantWord.Store(s.want)
	}
	period := r.policy.WakePeriod
	if period > WakePeriod && ctx.Done() != nil {
		// A long sleep would notice the context late: let its end wake
		// the sleeper. This costs an allocation per sleep, where the
		// crowd's sleeps are long and a wake-up dearer than it.
		stop := r.wakeWhenDone(ctx)
		err := r.sleep(ctx, s, progress, start, period)
		stop()
		return err
	}
	return r.sleep(ctx, s, progress, start, period)
}

// sleep is wait's last phase: it sleeps in the futex, period at a time,
// until s's counter reaches its want, the ring closes or ctx ends; after a
// whole period that brought progress short of the want, it returns for the
// caller to take what there is. start is when the wait began.
func (r *Ring) sleep(ctx context.Context, s *sleeper, progress func() bool, start time.Time, period time.Duration) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Read the event word before announcing the sleep and re-checking:
		// a wake after the re-check bumps the word, so the futex wait
		// returns at once instead of sleeping through it.
		seen := s.ev.Load()
		s.waiting.Store(1)
		if s.counter.Load() >= s.want || (s.also != nil && s.also()) || r.closed.Load() != 0 || r.local.Load() {
			s.waiting.Store(0)
			return nil
		}
		futexSleep(s.ev, seen, period)
		s.waiting.Store(0)
		if s.ev.Load() != seen || s.counter.Load() >= s.want || (s.also != nil && s.also()) {
			return nil
		}
		if progress() && time.Since(start) > period {
			// Progress, but less than wanted, for a whole period: let
			// the caller take what there is.
			return nil
		}
	}
}

// wakeWhenDone wakes every sleeper on the ring, both sides, once ctx
// ends, until the returned stop is called; the woken look again, and
// sleep on if their wait is not over. It takes the ring and not the
// sleeper's word: a closure holding the word would take the sleeper, and
// the closures it holds, to the heap on every wait.
func (r *Ring) wakeWhenDone(ctx context.Context) (stop func() bool) {
	return context.AfterFunc(ctx, r.wakeAll)
}

// ready reports whether the side can proceed at all, reading the other
// side's counter.
func (r *Ring) ready(consumer bool) bool {
	if consumer {
		return r.head.Load() != r.rTail
	}
	return r.wHead-r.tail.Load() < r.cap
}
