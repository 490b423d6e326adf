package shmlink

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// TestSplicedHeads: payloads posted one after another before the receiver
// reads any go partly through the pipe (the first whole, a later one only
// as far as the pipe has room, the last not at all once it is full) and
// partly in place, and every one arrives intact, copied out or visited,
// both ways.
func TestSplicedHeads(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	l, d := pair(t, 0)
	for _, dir := range []struct {
		name     string
		from, to *Link
	}{{"dialer to listener", d, l}, {"listener to dialer", l, d}} {
		if dir.from.pipes.out < 0 || dir.to.pipes.in < 0 {
			t.Fatalf("%s: no pipe (%+v, %+v)", dir.name, dir.from.pipes, dir.to.pipes)
		}
		sizes := []int{DirectMin, spliceCapacity, 3<<20 + 5, DirectMin + 3}
		sent := make([][]byte, len(sizes))
		for i, n := range sizes {
			sent[i] = patterned(n, byte(i+1))
			h := wire.Header{Seq: uint64(i), Len: uint32(n)}
			if posted, err := dir.from.TryPost(ctx, &h, sent[i], false); !posted || err != nil {
				t.Fatalf("%s: TryPost of %d bytes: posted %v, %v", dir.name, n, posted, err)
			}
		}
		inPipe, err := unix.IoctlGetInt(dir.to.pipes.in, unix.TIOCINQ) // FIONREAD
		if err != nil {
			t.Fatal(err)
		}
		var spliced []int
		for i, n := range sizes {
			var h wire.Header
			if err := dir.to.RecvHeader(ctx, &h); err != nil || h.Seq != uint64(i) {
				t.Fatalf("%s: header %+v, %v; want seq %d", dir.name, h, err, i)
			}
			spliced = append(spliced, dir.to.spliced)
			out := make([]byte, n)
			if i%2 == 0 {
				err = dir.to.RecvPayload(ctx, out)
			} else {
				err = dir.to.VisitPayload(ctx, n, func(off int, b []byte) { copy(out[off:], b) })
			}
			if err != nil {
				t.Fatalf("%s: payload %d: %v", dir.name, i, err)
			}
			if !bytes.Equal(out, sent[i]) {
				t.Fatalf("%s: payload %d (%d bytes, %d spliced) differs", dir.name, i, n, dir.to.spliced)
			}
		}
		if err := dir.from.WaitPosted(ctx); err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, s := range spliced {
			total += s
		}
		t.Logf("%s: spliced %v of %v, %d bytes in the pipe", dir.name, spliced, sizes, inPipe)
		if spliced[0] != sizes[0] || spliced[1] <= 0 || spliced[1] >= sizes[1] || spliced[3] != 0 || total != inPipe {
			t.Fatalf("%s: spliced %v of %v, %d bytes in the pipe: want the first whole, the second in part, the last none, and the pipe holding their sum",
				dir.name, spliced, sizes, inPipe)
		}
		if left, _ := unix.IoctlGetInt(dir.to.pipes.in, unix.TIOCINQ); left != 0 {
			t.Fatalf("%s: %d bytes left in the pipe", dir.name, left)
		}
	}
}

// TestNoPipes: a link dialled with NoPipes (HCCL_SHM_SPLICE_DISABLE=1) has
// no pipes on either side and still hands payloads over in place, read
// with process_vm_readv alone, both ways.
func TestNoPipes(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	l, d := pairWith(t, DialConfig{NoPipes: true})
	if !d.ReadsDirect() || !l.ReadsDirect() {
		t.Skip("this process may not read its own memory with process_vm_readv")
	}
	for _, dir := range []struct {
		name     string
		from, to *Link
	}{{"dialer to listener", d, l}, {"listener to dialer", l, d}} {
		if dir.from.pipes != noPipes || dir.to.pipes != noPipes {
			t.Fatalf("%s: pipes %+v and %+v, want none", dir.name, dir.from.pipes, dir.to.pipes)
		}
		p := patterned(DirectMin+7, 5)
		h := wire.Header{Len: uint32(len(p))}
		if posted, err := dir.from.TryPost(ctx, &h, p, false); !posted || err != nil {
			t.Fatalf("%s: TryPost: posted %v, %v", dir.name, posted, err)
		}
		if err := dir.to.RecvHeader(ctx, &h); err != nil {
			t.Fatal(err)
		}
		out := make([]byte, len(p))
		if err := dir.to.RecvPayload(ctx, out); err != nil {
			t.Fatalf("%s: %v", dir.name, err)
		}
		if dir.to.spliced != 0 || !bytes.Equal(out, p) {
			t.Fatalf("%s: %d bytes spliced, payload equal %v; want none spliced and the payload intact", dir.name, dir.to.spliced, bytes.Equal(out, p))
		}
		if err := dir.from.WaitPosted(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSplicedShortPipe: a frame whose spliced bytes are not in the pipe
// (here taken out behind the link's back) fails the receive with a clear
// error instead of hanging or delivering the wrong bytes.
func TestSplicedShortPipe(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	l, d := pair(t, 0)
	p := patterned(DirectMin, 3)
	h := wire.Header{Len: uint32(len(p))}
	if posted, err := d.TryPost(ctx, &h, p, false); !posted || err != nil {
		t.Fatalf("TryPost: posted %v, %v", posted, err)
	}
	stolen := make([]byte, 4096)
	if n, err := unix.Read(l.pipes.in, stolen); err != nil || n != len(stolen) {
		t.Fatalf("taking bytes out of the pipe: %d, %v", n, err)
	}
	if err := l.RecvHeader(ctx, &h); err != nil {
		t.Fatal(err)
	}
	err := l.RecvPayload(ctx, make([]byte, len(p)))
	if !errors.Is(err, errShortPipe) {
		t.Fatalf("receive with a short pipe: %v, want %v", err, errShortPipe)
	}
	t.Log(err)
}

// TestPipeBytes: the pipes of a host's ranks stay within pipeBudget, at
// most 1 MiB each and at least a page, and Dial asks that size of both
// pipes of a link.
func TestPipeBytes(t *testing.T) {
	for _, c := range []struct{ ranks, want int }{
		{1, 1 << 20}, {2, 1 << 20}, {4, 1 << 20}, {5, 512 << 10}, {8, 256 << 10}, {16, 64 << 10}, {1024, 4096},
	} {
		got := PipeBytes(c.ranks)
		if got != c.want || (c.ranks > 1 && got > 4096 && got*c.ranks*(c.ranks-1) > pipeBudget) {
			t.Errorf("PipeBytes(%d) = %d, want %d", c.ranks, got, c.want)
		}
	}
	l, d := pairWith(t, DialConfig{PipeBytes: 256 << 10})
	for _, fd := range []int{l.pipes.in, l.pipes.out, d.pipes.in, d.pipes.out} {
		if n, err := unix.FcntlInt(uintptr(fd), unix.F_GETPIPE_SZ, 0); err != nil || n != 256<<10 {
			t.Errorf("pipe of %d bytes (%v), want %d", n, err, 256<<10)
		}
	}
}
