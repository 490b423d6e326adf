package control

import (
	"bufio"
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
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
	{Type: tPing},
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
