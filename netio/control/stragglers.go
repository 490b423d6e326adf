package control

import (
	"fmt"
	"strings"
	"time"
)

// StragglerKind says why a rank holds up a collective.
type StragglerKind uint8

const (
	// StragglerStuck: alive and heard from within silentBeats heartbeats,
	// but it has not reached the call: it computes, waits elsewhere, or
	// deadlocked. Killing it is the user's call; waiting may help.
	StragglerStuck StragglerKind = iota + 1
	// StragglerLost: its connection is gone, or it has been silent for
	// more than silentBeats heartbeats (frozen, SIGSTOPped, cut off, or
	// about to be declared lost). Waiting will not help.
	StragglerLost
	// StragglerLeft: it closed its client before reaching the call.
	StragglerLeft
	// StragglerNotJoined: it never joined the job.
	StragglerNotJoined
)

func (k StragglerKind) String() string {
	switch k {
	case StragglerStuck:
		return "STUCK"
	case StragglerLost:
		return "LOST"
	case StragglerLeft:
		return "LEFT"
	case StragglerNotJoined:
		return "NOT JOINED"
	}
	return fmt.Sprintf("StragglerKind(%d)", uint8(k))
}

// silentBeats is how many heartbeat intervals of silence make a rank
// count as lost rather than stuck. One interval of silence is normal (a
// beat is due), two allow for a late beat on a loaded machine; past that
// the rank's process is not running its beat loop: frozen or cut off,
// even though the server keeps its connection until LostAfter.
const silentBeats = 2

// Straggler is a rank that holds up a collective, with the status it was
// judged by.
type Straggler struct {
	RankStatus
	Kind StragglerKind
}

// Stragglers explains why collective number seq has not completed: from
// a status of the job (Client.Status or Server.Status) it returns, in
// rank order, the ranks that have not arrived at call seq (Seq < seq, or
// not joined) and the ranks that are lost or silent whether they arrived
// or not (a lost rank cannot finish its part). heartbeat is the job's
// heartbeat interval (ServerConfig.HeartbeatInterval; zero means the
// default). A rank that reached seq less than a heartbeat before the
// status was taken may still show as behind. Stragglers is pure: no I/O,
// no clock.
func Stragglers(st []RankStatus, seq uint64, heartbeat time.Duration) []Straggler {
	if heartbeat <= 0 {
		heartbeat = DefaultHeartbeatInterval
	}
	silent := silentBeats * heartbeat
	var out []Straggler
	for _, r := range st {
		behind := r.Seq < seq
		var k StragglerKind
		switch {
		case r.State == NotJoined:
			k = StragglerNotJoined
		case r.State == Lost:
			k = StragglerLost
		case r.State == Left:
			if behind {
				k = StragglerLeft
			}
		case r.SilentFor > silent:
			k = StragglerLost
		case behind:
			k = StragglerStuck
		}
		if k != 0 {
			out = append(out, Straggler{RankStatus: r, Kind: k})
		}
	}
	return out
}

// String describes the straggler in one phrase, e.g.
// "rank 3 STUCK (alive, last call #4)" or "rank 5 LOST (silent for 4.1s, last seen in call #5)".
func (s Straggler) String() string {
	var why string
	switch s.Kind {
	case StragglerStuck:
		why = "alive, " + s.call()
	case StragglerLost:
		why = "silent for " + roundSilence(s.SilentFor) + ", " + s.call()
		if s.State == Lost {
			why = "disconnected, " + why
		}
	case StragglerLeft:
		if s.Seq == 0 && !s.InCall {
			why = "closed before any call"
		} else {
			why = "closed after call #" + fmt.Sprint(s.Seq)
		}
	case StragglerNotJoined:
		why = "never connected in " + roundSilence(s.SilentFor)
	default:
		why = s.State.String()
	}
	return fmt.Sprintf("rank %d %v (%s)", s.Rank, s.Kind, why)
}

// call describes the rank's progress as last reported: a heartbeat's
// worth of calls may have passed since ("last seen in", not "in").
func (s Straggler) call() string {
	switch {
	case s.InCall:
		return fmt.Sprintf("last seen in call #%d", s.Seq)
	case s.Seq == 0:
		return "no call yet"
	}
	return fmt.Sprintf("last call #%d", s.Seq)
}

// roundSilence keeps a silence readable: milliseconds under a second,
// tenths of a second above.
func roundSilence(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// maxFormatted is how many stragglers FormatStragglers names; the rest of
// a large job is counted by kind, so that an error message stays short.
const maxFormatted = 16

// FormatStragglers joins the stragglers' descriptions for an error
// message: "rank 3 STUCK (alive, last call #4), rank 5 LOST (silent for
// 4.1s, in call #5)". Past maxFormatted ranks it counts the rest by kind:
// ", and 300 more (200 STUCK, 100 LOST)". With no straggler it says
// "no straggler".
func FormatStragglers(s []Straggler) string {
	if len(s) == 0 {
		return "no straggler"
	}
	var b strings.Builder
	for i, x := range s[:min(len(s), maxFormatted)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x.String())
	}
	if rest := s[min(len(s), maxFormatted):]; len(rest) > 0 {
		var n [StragglerNotJoined + 1]int
		for _, x := range rest {
			if x.Kind <= StragglerNotJoined {
				n[x.Kind]++
			}
		}
		fmt.Fprintf(&b, ", and %d more (", len(rest))
		sep := ""
		for k := StragglerStuck; k <= StragglerNotJoined; k++ {
			if n[k] > 0 {
				fmt.Fprintf(&b, "%s%d %v", sep, n[k], k)
				sep = ", "
			}
		}
		b.WriteString(")")
	}
	return b.String()
}
