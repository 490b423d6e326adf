package launcher

import (
	"maps"
	"slices"
	"time"

	"github.com/hcclrun/hcclrun/netio/control"
)

// A rank's exit with code 0 is a success only when the rank left the job in
// order (Comm.Close: the control plane reported it left) or never joined a
// job that no rank joined (a program that does not use the runtime, such as
// hostname). Otherwise its peers would wait for it for ever: a rank that
// joined and exited without Close (its connection was lost, not left) may
// owe them a link or a collective, and a rank that never joined while the
// others did keeps them in Init. Open MPI fails such a job alike ("exited
// without calling finalize"); so does the launcher, naming the rank.
//
// The exit and the control plane's news travel apart: the news of a rank
// that left is sent before it exits but may be read after its exit. So an
// exit 0 that the news has not explained yet waits for it. A rank seen
// joining waits for its left or lost, which the server sends promptly once
// the process is gone (its socket closes). A rank not seen joining waits
// joinWindow, then the server's own state (controlPlane.States) settles it:
// after the process is gone, "not joined" there is final.

// joinWindow is how long an exit 0 of a rank not seen joining waits for the
// news of its joining before the server is asked.
const joinWindow = lostWindow

// ctlView is what the control plane's events said of a rank so far.
type ctlView uint8

const (
	viewNone   ctlView = iota // not seen joining
	viewJoined                // joined, still connected
	viewLeft                  // left in order
	viewLost                  // connection lost without a goodbye
)

// onJoined: rank was admitted by the control plane.
func (s *supervisor) onJoined(rank int) {
	if s.view[rank] == viewNone {
		s.view[rank] = viewJoined
	}
	s.anyJoined = true
	if s.unseen[rank] {
		// Its exit was read first: now its left or lost is awaited.
		delete(s.unseen, rank)
		s.waitingLeave[rank] = true
	}
	s.failNeverJoined()
}

// onLeft: rank closed its connection in order.
func (s *supervisor) onLeft(rank int) {
	s.view[rank] = viewLeft
	delete(s.waitingLeave, rank)
	delete(s.unseen, rank)
}

// onExitedZero judges the exit 0 of rank, when the job is not coming down.
func (s *supervisor) onExitedZero(rank int) {
	switch s.view[rank] {
	case viewLost:
		s.fail(s.noCloseError(rank))
	case viewLeft:
	case viewJoined:
		s.waitingLeave[rank] = true
	default:
		s.unseen[rank] = true
		time.AfterFunc(joinWindow, func() { s.joinDue <- rank })
	}
}

// onLostAfterExit: the control plane lost a rank that had already exited
// with code 0; it never called Close.
func (s *supervisor) onLostAfterExit(rank int) {
	delete(s.waitingLeave, rank)
	delete(s.unseen, rank)
	s.fail(s.noCloseError(rank))
}

// onJoinDue: the window of a rank that exited 0 unseen has passed.
func (s *supervisor) onJoinDue(rank int) {
	if s.tearing || !s.unseen[rank] {
		return
	}
	delete(s.unseen, rank)
	s.settle(rank, s.ctl.States()[rank])
	s.failNeverJoined()
}

// settleUnseen settles every exit 0 still in its window at once, from the
// server's state, when nothing else is left to wait for, so that a job of
// a program that never joins does not wait a window per rank. It reports
// whether there is still something to wait for.
func (s *supervisor) settleUnseen() bool {
	if s.tearing || len(s.unseen) == 0 {
		return false
	}
	states := s.ctl.States()
	for _, st := range states {
		if st != control.NotJoined {
			s.anyJoined = true
		}
	}
	for _, rank := range slices.Sorted(maps.Keys(s.unseen)) {
		delete(s.unseen, rank)
		s.settle(rank, states[rank])
	}
	s.failNeverJoined()
	return !s.tearing && len(s.waitingLeave) > 0
}

// settle decides the exit 0 of rank, unseen by the events, from the
// server's state st, read after the process was gone.
func (s *supervisor) settle(rank int, st control.RankState) {
	switch st {
	case control.NotJoined:
		s.neverJoined = append(s.neverJoined, rank)
	case control.Alive:
		// Joined; its connection's end is not through the server yet.
		s.view[rank] = viewJoined
		s.anyJoined = true
		s.waitingLeave[rank] = true
	case control.Left:
		s.view[rank] = viewLeft
		s.anyJoined = true
	case control.Lost:
		s.view[rank] = viewLost
		s.anyJoined = true
		s.fail(s.noCloseError(rank))
	}
}

// failNeverJoined fails the job for the first rank that exited 0 without
// joining, once another rank has joined.
func (s *supervisor) failNeverJoined() {
	if s.tearing || !s.anyJoined || len(s.neverJoined) == 0 {
		return
	}
	rank := s.neverJoined[0]
	s.fail(&RankError{Rank: rank, Pid: s.procs[rank].Pid(), Host: s.host(rank), Status: s.statuses[rank], NoInit: true})
}

func (s *supervisor) noCloseError(rank int) *RankError {
	return &RankError{Rank: rank, Pid: s.procs[rank].Pid(), Host: s.host(rank), Status: s.statuses[rank], NoClose: true}
}
