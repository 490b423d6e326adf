package control

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// wireSamples is one message of every type, used by the round-trip test
// and as the fuzz seeds.
var wireSamples = []msg{
	{Type: tJoin, Size: 8},
	{Type: tWelcome, Heartbeat: 500, LostAfter: 3000},
	{Type: tRefuse, Text: "rank 9 out of range for a job of 8 ranks"},
	{Type: tPut, ID: 1, Key: "endpoint/3", Value: []byte("10.77.0.3:41000")},
	{Type: tPut, ID: 2, Key: "", Value: []byte{}},
	{Type: tGet, ID: 3, Key: "endpoint/0"},
	{Type: tBarrier, ID: 4, Key: "init"},
	{Type: tCancel, ID: 5},
	{Type: tReply, ID: 6, Code: codeOK, Value: []byte("v"), Text: ""},
	{Type: tReply, ID: 7, Code: codeError, Value: []byte{}, Text: "rank 2 is already waiting in barrier"},
	{Type: tReply, ID: 8, Code: codeCancelled, Value: []byte{}},
	{Type: tAbort, Origin: -1, Text: "launcher: rank 3 killed by SIGKILL"},
	{Type: tLeave},
	{Type: tPing}, // the server's: no progress
	{Type: tPing, Seq: 42, InCall: true},
	{Type: tPing, Seq: 43, InCall: true, Where: uint64(wire.MakeWhere(1, 2, 3))},
	{Type: tClock, ID: 12},
	{Type: tStatus, ID: 9, Seq: 7},
	{Type: tStatusReply, ID: 10, Ranks: []RankStatus{
		{Rank: 0, State: NotJoined, SilentFor: 1500 * time.Millisecond},
		{Rank: 1, State: Alive, Seq: 5, InCall: true, SilentFor: 300 * time.Millisecond},
		{Rank: 2, State: Left, Seq: 3},
		{Rank: 3, State: Lost, Seq: 1<<63 - 1, SilentFor: math.MaxUint32 * time.Millisecond},
		{Rank: 4, State: Alive, Seq: math.MaxUint64, InCall: true, SilentFor: 127 * time.Millisecond},
	}},
	{Type: tStatusReply, ID: 11, Ranks: []RankStatus{}},
}

func TestWireRoundTrip(t *testing.T) {
	var stream []byte
	for i := range wireSamples {
		var err error
		stream, err = appendMsg(stream, &wireSamples[i])
		if err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(bytes.NewReader(stream))
	for _, want := range wireSamples {
		got, err := readMsg(r)
		if err != nil {
			t.Fatalf("readMsg: %v", err)
		}
		if want.Value == nil && (want.Type == tPut || want.Type == tReply) {
			want.Value = []byte{}
		}
		if got.Value == nil && len(want.Value) == 0 {
			got.Value = want.Value
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
}

func TestWireRejects(t *testing.T) {
	long := strings.Repeat("k", MaxKeySize+1)
	for _, tc := range []struct {
		name string
		in   []byte // a whole stream: length prefix and body
	}{
		{"zero length", []byte{0, 0, 0, 0}},
		{"over the cap", []byte{0xff, 0xff, 0xff, 0x7f, byte(tPing)}},
		{"unknown type", []byte{1, 0, 0, 0, 200}},
		{"type zero", []byte{1, 0, 0, 0, 0}},
		{"trailing byte", []byte{2, 0, 0, 0, byte(tPing), 0}},
		{"short join", []byte{3, 0, 0, 0, byte(tJoin), 1, 0}},
		{"key length past the end", append([]byte{13, 0, 0, 0, byte(tGet), 1, 0, 0, 0, 0, 0, 0, 0}, 0xff, 0, 0, 0)},
		{"key over the limit", func() []byte {
			b := []byte{0, 0, 0, 0, byte(tGet), 1, 0, 0, 0, 0, 0, 0, 0}
			b = appendStr(b, long)
			b[0], b[1], b[2] = byte(len(b)-4), byte((len(b)-4)>>8), 0
			return b
		}()},
		{"bad reply code", func() []byte {
			b, _ := appendMsg(nil, &msg{Type: tReply, ID: 1, Code: 9})
			return b
		}()},
		{"truncated body", []byte{9, 0, 0, 0, byte(tCancel), 1, 2}},
		{"server ping of the old, empty encoding", []byte{1, 0, 0, 0, byte(tPing)}},
		{"in call byte 2", frame(byte(tPing), 1, 0, 0, 0, 0, 0, 0, 0, 2)},
		{"status without progress", frame(byte(tStatus), 1, 0, 0, 0, 0, 0, 0, 0)},
		{"status entry with reserved flags", statusFrame(1, 0x08, 1, 1)},
		{"status entry cut short", statusFrame(1, 0x01, 1, 0x80)},
		{"status count over the bytes", statusFrame(2, 0x01, 1, 1)},
		{"status count over the limit", func() []byte {
			b := []byte{byte(tStatusReply), 1, 0, 0, 0, 0, 0, 0, 0}
			b = binary.LittleEndian.AppendUint32(b, MaxStatusRanks+1)
			return frame(append(b, make([]byte, minStatusEntry*(MaxStatusRanks+1))...)...)
		}()},
		{"status seq as an overlong uvarint", statusFrame(1, 0x01, 0x85, 0x00, 1)},
		{"status seq over 64 bits", statusFrame(1, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 1)},
		{"status silence over the cap", statusFrame(1, 0x01, 1, 0x80, 0x80, 0x80, 0x80, 0x10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readMsg(bufio.NewReader(bytes.NewReader(tc.in)))
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.name != "truncated body" && !errors.Is(err, errBadMessage) {
				t.Fatalf("error %v does not wrap errBadMessage", err)
			}
		})
	}
	if _, err := appendMsg(nil, &msg{Type: tGet, Key: long}); err == nil {
		t.Fatal("encoder accepted a key over the limit")
	}
	if _, err := appendMsg(nil, &msg{Type: tStatusReply, Ranks: make([]RankStatus, MaxStatusRanks+1)}); err == nil {
		t.Fatal("encoder accepted a status over the limit")
	}
}

// frame prefixes a message body with its length.
func frame(body ...byte) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// statusFrame is a StatusReply with ID 1, count n and raw entry bytes.
func statusFrame(n uint32, entries ...byte) []byte {
	b := []byte{byte(tStatusReply), 1, 0, 0, 0, 0, 0, 0, 0}
	b = binary.LittleEndian.AppendUint32(b, n)
	return frame(append(b, entries...)...)
}

// TestStatusReplyWorstCase encodes the longest possible status (every
// rank of the largest job with the longest sequence number and silence)
// and reads it back through the length cap.
func TestStatusReplyWorstCase(t *testing.T) {
	ranks := make([]RankStatus, MaxStatusRanks)
	for i := range ranks {
		ranks[i] = RankStatus{Rank: i, State: Lost, Seq: math.MaxUint64, InCall: true,
			SilentFor: math.MaxUint32 * time.Millisecond}
	}
	b, err := appendMsg(nil, &msg{Type: tStatusReply, ID: math.MaxUint64, Ranks: ranks})
	if err != nil {
		t.Fatal(err)
	}
	if len(b)-4 != maxStatusReply || len(b)-4 > maxMessage {
		t.Fatalf("worst-case reply of %d bytes, computed %d, cap %d", len(b)-4, maxStatusReply, maxMessage)
	}
	m, err := readMsg(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Ranks, ranks) {
		t.Fatal("worst-case reply did not round-trip")
	}
	t.Logf("worst case: %d ranks in %d bytes (%d per rank); cap %d", len(ranks), len(b)-4, maxStatusEntry, maxMessage)
}

// TestSilenceSaturates: a silence past the wire's cap is sent as the
// cap, never wrapped round to a short one.
func TestSilenceSaturates(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, 0, 999 * time.Microsecond, 60 * 24 * time.Hour, math.MaxInt64} {
		b, err := appendMsg(nil, &msg{Type: tStatusReply, Ranks: []RankStatus{{State: Alive, SilentFor: d}}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := decodeMsg(b[4:])
		if err != nil {
			t.Fatal(err)
		}
		want := min(max(d, 0), math.MaxUint32*time.Millisecond).Truncate(time.Millisecond)
		if got := m.Ranks[0].SilentFor; got != want {
			t.Errorf("silence %v arrived as %v, want %v", d, got, want)
		}
	}
}

// FuzzDecode checks that decodeMsg never panics and that what it accepts
// encodes back to exactly the same bytes.
func FuzzDecode(f *testing.F) {
	for i := range wireSamples {
		b, err := appendMsg(nil, &wireSamples[i])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[4:])
	}
	f.Add([]byte{})
	f.Add([]byte{200})
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := decodeMsg(body)
		if err != nil {
			if !errors.Is(err, errBadMessage) {
				t.Fatalf("error %v does not wrap errBadMessage", err)
			}
			return
		}
		out, err := appendMsg(nil, &m)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", m, err)
		}
		if !bytes.Equal(out[4:], body) {
			t.Fatalf("re-encoded %x, want %x", out[4:], body)
		}
	})
}
