package control

import (
	"fmt"
	"sync"
)

// Event is something the launcher may want to act on. It is one of
// RankJoined, RankLeft, RankLost, RankAborted.
type Event interface {
	fmt.Stringer
	event()
}

// RankJoined: Rank connected, authenticated and was admitted.
type RankJoined struct{ Rank int }

// RankLeft: Rank called Client.Close.
type RankLeft struct{ Rank int }

// RankLost: Rank's connection broke, sent garbage, or fell silent for
// LostAfter, without an orderly Close. Err says which.
type RankLost struct {
	Rank int
	Err  error
}

// RankAborted: Rank called Client.Abort; the server has broadcast it.
type RankAborted struct {
	Rank   int
	Reason string
}

func (RankJoined) event()  {}
func (RankLeft) event()    {}
func (RankLost) event()    {}
func (RankAborted) event() {}

func (e RankJoined) String() string  { return fmt.Sprintf("rank %d joined", e.Rank) }
func (e RankLeft) String() string    { return fmt.Sprintf("rank %d left", e.Rank) }
func (e RankLost) String() string    { return fmt.Sprintf("rank %d lost: %v", e.Rank, e.Err) }
func (e RankAborted) String() string { return fmt.Sprintf("rank %d aborted: %s", e.Rank, e.Reason) }

// eventQueue hands events to one channel without ever blocking the server:
// the queue grows instead (events are few, one or two per rank), and a
// pump goroutine delivers them in order.
type eventQueue struct {
	mu    sync.Mutex
	cond  *sync.Cond
	items []Event
	done  bool
	out   chan Event
	stop  chan struct{}
}

func newEventQueue() *eventQueue {
	q := &eventQueue{out: make(chan Event), stop: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	go q.pump()
	return q
}

func (q *eventQueue) push(e Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.done {
		q.items = append(q.items, e)
		q.cond.Signal()
	}
}

func (q *eventQueue) pump() {
	defer close(q.out)
	for {
		q.mu.Lock()
		for len(q.items) == 0 && !q.done {
			q.cond.Wait()
		}
		if q.done {
			q.mu.Unlock()
			return
		}
		e := q.items[0]
		q.items = q.items[1:]
		q.mu.Unlock()
		select {
		case q.out <- e:
		case <-q.stop:
			return
		}
	}
}

// close discards what was not delivered and closes the channel.
func (q *eventQueue) close() {
	q.mu.Lock()
	if !q.done {
		q.done = true
		close(q.stop)
		q.cond.Signal()
	}
	q.mu.Unlock()
}
