package shmlink

import (
	"container/list"
	"net"
	"sync"
)

// DefaultMaxSetups bounds the set-ups in progress whose dialer has not
// authenticated yet, when ListenConfig.MaxSetups is zero. A connection
// arriving beyond the bound evicts the oldest of them, as netio's
// listener does for its handshakes: silent connections (a flood, a slow
// loris, all from this user, since others are refused at once) then hold
// at most this many descriptors and goroutines and cannot lock the ranks
// out, since a rank's handshake takes microseconds and a staller's the
// whole set-up timeout. A host's ranks dial at most a few at a time.
const DefaultMaxSetups = 64

// setups are the set-ups in progress that have not authenticated yet,
// oldest first.
type setups struct {
	max int
	mu  sync.Mutex
	l   list.List // of *setup
}

// setup is one connection in set-up.
type setup struct {
	conn    *net.UnixConn
	el      *list.Element // nil once settled or evicted
	evicted bool
}

// admit records conn as a set-up in progress and returns the one evicted
// to make room for it, if any, closed already.
func (s *setups) admit(conn *net.UnixConn) (su, evicted *setup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.l.Len() >= s.max {
		evicted = s.l.Remove(s.l.Front()).(*setup)
		evicted.el, evicted.evicted = nil, true
		evicted.conn.Close() // its handshake fails at once and its goroutine ends
	}
	su = &setup{conn: conn}
	su.el = s.l.PushBack(su)
	return su, evicted
}

// settle takes su off the list once its dialer authenticated or it
// failed. It reports false if su was evicted meanwhile; it may be called
// again.
func (s *setups) settle(su *setup) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if su.evicted {
		return false
	}
	if su.el != nil {
		s.l.Remove(su.el)
		su.el = nil
	}
	return true
}

// len is the number of set-ups in progress not authenticated yet.
func (s *setups) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.l.Len()
}
