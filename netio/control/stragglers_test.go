package control

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestStragglers(t *testing.T) {
	const hb = 500 * time.Millisecond
	alive := func(rank int, seq uint64, inCall bool, silent time.Duration) RankStatus {
		return RankStatus{Rank: rank, State: Alive, Seq: seq, InCall: inCall, SilentFor: silent}
	}
	for _, tc := range []struct {
		name string
		st   RankStatus
		seq  uint64
		want StragglerKind // 0: not a straggler
		text string
	}{
		{"arrived, in the call", alive(0, 5, true, 10*time.Millisecond), 5, 0, ""},
		{"arrived and finished", alive(0, 5, false, 0), 5, 0, ""},
		{"ahead", alive(0, 9, true, 0), 5, 0, ""},
		{"behind, out of calls", alive(3, 4, false, 100*time.Millisecond), 5, StragglerStuck, "rank 3 STUCK (alive, last call #4)"},
		{"behind, inside an earlier call", alive(3, 4, true, 0), 5, StragglerStuck, "rank 3 STUCK (alive, last seen in call #4)"},
		{"no call yet", alive(3, 0, false, 0), 1, StragglerStuck, "rank 3 STUCK (alive, no call yet)"},
		{"silent exactly two beats: still stuck", alive(3, 4, false, 2*hb), 5, StragglerStuck, "rank 3 STUCK"},
		{"silent past two beats: lost", alive(5, 4, false, 4100*time.Millisecond), 5, StragglerLost, "rank 5 LOST (silent for 4.1s, last call #4)"},
		{"silent but arrived: still lost", alive(5, 5, true, 1200*time.Millisecond), 5, StragglerLost, "rank 5 LOST (silent for 1.2s, last seen in call #5)"},
		{"silence rounds to tenths", alive(5, 5, true, 2460*time.Millisecond), 5, StragglerLost, "(silent for 2.5s, last seen in call #5)"},
		{"disconnected", RankStatus{Rank: 6, State: Lost, Seq: 5, InCall: true, SilentFor: 3 * time.Second}, 5, StragglerLost,
			"rank 6 LOST (disconnected, silent for 3s, last seen in call #5)"},
		{"disconnected, heard a moment ago", RankStatus{Rank: 6, State: Lost, Seq: 2}, 5, StragglerLost, "rank 6 LOST (disconnected, silent for 0s, last call #2)"},
		{"left before the call", RankStatus{Rank: 2, State: Left, Seq: 3, SilentFor: time.Hour}, 5, StragglerLeft, "rank 2 LEFT (closed after call #3)"},
		{"left before any call", RankStatus{Rank: 2, State: Left}, 1, StragglerLeft, "rank 2 LEFT (closed before any call)"},
		{"left after the call", RankStatus{Rank: 2, State: Left, Seq: 5, SilentFor: time.Hour}, 5, 0, ""},
		{"never joined", RankStatus{Rank: 7, State: NotJoined, SilentFor: 12 * time.Second}, 5, StragglerNotJoined, "rank 7 NOT JOINED (never connected in 12s)"},
		{"never joined, call 0", RankStatus{Rank: 7, State: NotJoined, SilentFor: 80 * time.Millisecond}, 0, StragglerNotJoined, "rank 7 NOT JOINED (never connected in 80ms)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Stragglers([]RankStatus{tc.st}, tc.seq, hb)
			if tc.want == 0 {
				if len(got) != 0 {
					t.Fatalf("straggler %v", got[0])
				}
				return
			}
			if len(got) != 1 || got[0].Kind != tc.want || got[0].RankStatus != tc.st {
				t.Fatalf("got %+v, want one %v", got, tc.want)
			}
			if s := got[0].String(); !strings.Contains(s, tc.text) {
				t.Fatalf("%q does not contain %q", s, tc.text)
			}
		})
	}
}

// TestStragglersHeartbeat: the silence threshold scales with the
// heartbeat, and zero means the default.
func TestStragglersHeartbeat(t *testing.T) {
	st := []RankStatus{{Rank: 0, State: Alive, Seq: 1, SilentFor: 1500 * time.Millisecond}}
	for _, tc := range []struct {
		hb   time.Duration
		want StragglerKind
	}{
		{100 * time.Millisecond, StragglerLost},
		{0, StragglerLost}, // default 500 ms: 1.5 s is three beats
		{time.Second, StragglerStuck},
	} {
		if got := Stragglers(st, 2, tc.hb); len(got) != 1 || got[0].Kind != tc.want {
			t.Errorf("heartbeat %v: %+v, want %v", tc.hb, got, tc.want)
		}
	}
}

func TestFormatStragglers(t *testing.T) {
	st := []RankStatus{
		{Rank: 0, State: Alive, Seq: 5, InCall: true},
		{Rank: 3, State: Alive, Seq: 4},
		{Rank: 5, State: Alive, Seq: 5, InCall: true, SilentFor: 4100 * time.Millisecond},
	}
	got := FormatStragglers(Stragglers(st, 5, 500*time.Millisecond))
	if want := "rank 3 STUCK (alive, last call #4), rank 5 LOST (silent for 4.1s, last seen in call #5)"; got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if got := FormatStragglers(nil); got != "no straggler" {
		t.Fatalf("empty: %q", got)
	}

	// A large job: the first maxFormatted are named, the rest counted.
	var big []RankStatus
	for r := range 1000 {
		s := RankStatus{Rank: r, State: Alive, Seq: 5, InCall: true}
		switch r % 4 {
		case 1:
			s.Seq = 4
		case 2:
			s.State = Lost
		case 3:
			s.State = NotJoined
		}
		big = append(big, s)
	}
	sg := Stragglers(big, 5, 0)
	if len(sg) != 750 {
		t.Fatalf("%d stragglers, want 750", len(sg))
	}
	got = FormatStragglers(sg)
	if n := strings.Count(got, "rank "); n != maxFormatted {
		t.Fatalf("%d ranks named, want %d: %s", n, maxFormatted, got)
	}
	if want := fmt.Sprintf(", and %d more (%d STUCK, %d LOST, %d NOT JOINED)", 750-maxFormatted, 250-6, 250-5, 250-5); !strings.HasSuffix(got, want) {
		t.Fatalf("got %q, want suffix %q", got, want)
	}
}

func TestStateStrings(t *testing.T) {
	got := []string{NotJoined.String(), Alive.String(), Left.String(), Lost.String(), RankState(9).String(),
		StragglerStuck.String(), StragglerLost.String(), StragglerLeft.String(), StragglerNotJoined.String(), StragglerKind(0).String()}
	want := []string{"not joined", "alive", "left", "lost", "RankState(9)", "STUCK", "LOST", "LEFT", "NOT JOINED", "StragglerKind(0)"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
