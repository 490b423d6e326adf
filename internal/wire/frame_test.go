package wire

import (
	"bytes"
	"errors"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{},
		{Seq: 1, Call: Call{Coll: 2, DType: 3, Op: 4, Root: -1, Count: 1 << 40}, Src: 7, Step: 9, Offset: 1 << 33, Len: 4096},
		{Seq: ^uint64(0), Call: Call{Coll: 255, DType: 255, Op: 255, Root: -2147483648, Count: ^uint64(0)}, Src: ^uint32(0), Step: ^uint32(0), Offset: ^uint64(0), Len: ^uint32(0)},
	} {
		b := make([]byte, HeaderSize)
		h.Encode(b)
		var got Header
		if err := got.Decode(b); err != nil {
			t.Fatalf("Decode(Encode(%+v)): %v", h, err)
		}
		if got != h {
			t.Fatalf("round trip: got %+v, want %+v", got, h)
		}
	}
}

func TestHeaderDecodeErrors(t *testing.T) {
	good := make([]byte, HeaderSize)
	(&Header{Seq: 5, Len: 10}).Encode(good)
	for _, tc := range []struct {
		name string
		mod  func(b []byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:HeaderSize-1] }},
		{"empty", func(b []byte) []byte { return nil }},
		{"magic", func(b []byte) []byte { b[0] ^= 1; return b }},
		{"reserved", func(b []byte) []byte { b[7] = 1; return b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mod(bytes.Clone(good))
			var h Header
			if err := h.Decode(b); !errors.Is(err, ErrBadFrame) {
				t.Fatalf("Decode: %v, want ErrBadFrame", err)
			}
		})
	}
}

// FuzzHeader checks that Decode never panics and that every header it
// accepts encodes back to the same bytes (the format has no slack).
func FuzzHeader(f *testing.F) {
	b := make([]byte, HeaderSize)
	(&Header{Seq: 3, Call: Call{Coll: 1, DType: 9, Op: 1, Root: -1, Count: 1024}, Src: 2, Step: 5, Offset: 512, Len: 512}).Encode(b)
	f.Add(b)
	f.Add(b[:10])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		if err := h.Decode(b); err != nil {
			if !errors.Is(err, ErrBadFrame) {
				t.Fatalf("Decode error %v does not wrap ErrBadFrame", err)
			}
			return
		}
		out := make([]byte, HeaderSize)
		h.Encode(out)
		if !bytes.Equal(out, b[:HeaderSize]) {
			t.Fatalf("Encode(Decode(b)) = %x, want %x", out, b[:HeaderSize])
		}
	})
}
