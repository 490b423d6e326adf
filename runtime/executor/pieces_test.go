package executor

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// sumInt32 is a reference kernel: dst = a + b over little-endian int32.
func sumInt32(dst, a, b []byte) {
	for i := 0; i+4 <= len(dst); i += 4 {
		binary.LittleEndian.PutUint32(dst[i:], binary.LittleEndian.Uint32(a[i:])+binary.LittleEndian.Uint32(b[i:]))
	}
	if len(dst)%4 != 0 {
		panic("kernel called on a partial element")
	}
}

// subInt32 is a kernel whose argument order shows: dst = a - b.
func subInt32(dst, a, b []byte) {
	for i := 0; i+4 <= len(dst); i += 4 {
		binary.LittleEndian.PutUint32(dst[i:], binary.LittleEndian.Uint32(a[i:])-binary.LittleEndian.Uint32(b[i:]))
	}
	if len(dst)%4 != 0 {
		panic("kernel called on a partial element")
	}
}

// TestPieceReducerSplitsElements: pieces of any sizes, splitting elements
// anywhere, reduce to the same bytes as one whole-payload kernel call, in
// the order asked (src op incoming, or incoming op src with peerFirst),
// and the kernel never sees a partial element.
func TestPieceReducerSplitsElements(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 4 * rng.IntN(300)
		src, in := make([]byte, n), make([]byte, n)
		for i := range src {
			src[i], in[i] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		peerFirst := trial%2 == 1
		want := make([]byte, n)
		if peerFirst {
			subInt32(want, in, src)
		} else {
			subInt32(want, src, in)
		}

		got := make([]byte, n)
		var p pieceReducer
		fn := p.start(4, got, src, subInt32, peerFirst)
		for off := 0; off < n; {
			k := min(1+rng.IntN(13), n-off)
			fn(off, in[off:off+k])
			off += k
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("trial %d (n=%d, peerFirst %v): pieces reduced to other bytes than the whole", trial, n, peerFirst)
		}
		if p.carried != 0 {
			t.Fatalf("trial %d: %d bytes left in the carry", trial, p.carried)
		}
	}
}

// TestPieceReducerInPlace: dst and src may be the same buffer (RecvReduce
// accumulating in place).
func TestPieceReducerInPlace(t *testing.T) {
	buf := make([]byte, 40)
	in := make([]byte, 40)
	for i := range 10 {
		binary.LittleEndian.PutUint32(buf[4*i:], uint32(i))
		binary.LittleEndian.PutUint32(in[4*i:], 100)
	}
	var p pieceReducer
	fn := p.start(4, buf, buf, sumInt32, false)
	for _, cut := range [][2]int{{0, 3}, {3, 9}, {9, 10}, {10, 33}, {33, 40}} {
		fn(cut[0], in[cut[0]:cut[1]])
	}
	for i := range 10 {
		if v := binary.LittleEndian.Uint32(buf[4*i:]); v != uint32(100+i) {
			t.Fatalf("element %d = %d, want %d", i, v, 100+i)
		}
	}
}
