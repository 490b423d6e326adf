package launcher

import (
	"bytes"
	"encoding/binary"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	frames := []frame{
		{typ: msgHello, msg: agentMsg{Version: agentProtoVersion, Cwd: "/home/u/job"}},
		{typ: msgStart, msg: agentMsg{Rank: 3, Path: "./train", Args: []string{"-lr", "0.1", ""}, Env: []string{"HCCL_JOB_KEY=00ff"}, Stdin: true}},
		{typ: msgOutput, rank: 7, stream: streamStderr, data: []byte("half a li")},
		{typ: msgStdin, rank: 0, stream: streamStdin, data: []byte("x\n")},
		{typ: msgExited, msg: agentMsg{Rank: 2, Code: -1, Signal: 9}},
		{typ: msgHeartbeat},
		{typ: msgBye},
		{typ: msgStage, msg: agentMsg{Data: bytes.Repeat([]byte{0, 1, 2}, 1000)}},
	}
	var stream []byte
	for _, f := range frames {
		var err error
		if stream, err = appendFrame(stream, f); err != nil {
			t.Fatal(err)
		}
	}
	r := bytes.NewReader(stream)
	for i, want := range frames {
		got, err := readFrame(r)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if len(got.data) == 0 {
			got.data = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("frame %d: got %+v, want %+v", i, got, want)
		}
	}
	if _, err := readFrame(r); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

func TestFrameErrors(t *testing.T) {
	hdr := func(n uint32, typ byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, n)
		return append(b, typ)
	}
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"truncated header", []byte{0, 0}, "truncated frame header"},
		{"zero length", hdr(0, msgHeartbeat), "out of range"},
		{"huge length", hdr(maxFrame+1, msgOutput), "out of range"},
		{"unknown type", hdr(1, 200), "unknown frame type 200"},
		{"type zero", hdr(1, 0), "unknown frame type 0"},
		{"truncated body", append(hdr(10, msgStart), '{'), "truncated frame"},
		{"bad json", append(hdr(3, msgStart), '{', 'x'), "frame of type 5"},
		{"short output", append(hdr(3, msgOutput), 0, 0), "want at least 5"},
		{"output on stdin stream", append(hdr(6, msgOutput), 0, 0, 0, 1, streamStdin), "bad stream"},
		{"negative rank", append(hdr(12, msgSignal), []byte(`{"rank":-1}`)...), "negative rank"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readFrame(bytes.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("readFrame: %v, want %q", err, tt.want)
			}
		})
	}
}

// FuzzReadFrame: the decoder never panics nor allocates beyond the frame
// limit, and whatever it accepts re-encodes to a frame that decodes the
// same. Seeds are in testdata/fuzz/FuzzReadFrame.
func FuzzReadFrame(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		for range 16 {
			fr, err := readFrame(r)
			if err != nil {
				return
			}
			enc, err := appendFrame(nil, fr)
			if err != nil {
				t.Fatalf("re-encode %+v: %v", fr, err)
			}
			again, err := readFrame(bytes.NewReader(enc))
			if err != nil {
				t.Fatalf("decode re-encoded %+v: %v", fr, err)
			}
			if len(fr.data) == 0 {
				fr.data = nil
			}
			if len(again.data) == 0 {
				again.data = nil
			}
			if !reflect.DeepEqual(fr, again) {
				t.Fatalf("round trip: %+v became %+v", fr, again)
			}
		}
	})
}
