package shm

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// FuzzRing drives one ring through a random sequence of reservations,
// commits, peeks, releases and moves to the front (ToFront), in one
// goroutine, and checks every result against a model (a plain byte queue,
// the positions, and the skip ahead of the consumer): the sizes of
// reservations and peeks at the wrap, at a skip and when full or empty,
// that a skip keeps the room it promised, and the bytes that come out.
// Blocking calls get a cancelled context, so a full or empty ring answers
// with the context's error instead of waiting.
func FuzzRing(f *testing.F) {
	f.Add([]byte{0, 200, 1, 150, 0, 255, 1, 255, 0, 100, 1, 7})
	f.Add([]byte{2, 255, 2, 255, 3, 255, 3, 255})
	f.Add(bytes.Repeat([]byte{0, 99, 1, 98}, 16))
	f.Add(bytes.Repeat([]byte{0, 70, 4, 20, 1, 90, 0, 30, 3, 10}, 16))
	f.Fuzz(fuzzBody)
}

func fuzzBody(t *testing.T, ops []byte) {
	if len(ops) > 8192 {
		ops = ops[:8192] // longer inputs find nothing new, only take time
	}
	const capacity = MinRingCapacity
	mem := make([]byte, RingBytes(capacity))
	prod, err := NewRing(mem, capacity)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := OpenRing(mem)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var model []byte
	var written, read uint64           // absolute positions, as the ring counts
	var skip struct{ from, to uint64 } // the skip ahead of the consumer, if to > 0
	next := byte(0)
	freeOf := func() int { // the producer's room: a skip's gap is free once the consumer reached it
		tail := read
		if skip.to > 0 && read == skip.from {
			tail = skip.to
		}
		return capacity - int(written-tail)
	}
	for len(ops) >= 2 {
		op, n := ops[0]%5, int(ops[1])+1
		ops = ops[2:]
		switch op {
		case 4: // move to the front for a message of n bytes
			before, free := prod.wHead, freeOf()
			prod.ToFront(n)
			if prod.wHead == before {
				continue
			}
			off := int(before % capacity)
			if skip.to > 0 || off == 0 || off < int(written-read) || off-int(written-read) < n {
				t.Fatalf("skip at %d (offset %d) for %d bytes with %d unread, skip pending %v", before, off, n, written-read, skip)
			}
			written = prod.wHead
			skip.from, skip.to = before, prod.wHead
			if got := freeOf(); free >= n && got < n {
				t.Fatalf("skip left %d bytes free for a message of %d", got, n)
			}
		case 0, 2: // reserve n, commit all (0) or half (2) of it
			free := freeOf()
			b, err := prod.Reserve(ctx, n)
			if free == 0 {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("reserve on a full ring: %d bytes, %v", len(b), err)
				}
				continue
			}
			want := min(free, capacity-int(written%capacity), n)
			if err != nil || len(b) != want {
				t.Fatalf("reserve %d with %d free at %d: got %d bytes, %v; want %d", n, free, written, len(b), err, want)
			}
			k := len(b)
			if op == 2 {
				k /= 2
			}
			for i := range b[:k] {
				b[i] = next
				next++
			}
			model = append(model, b[:k]...)
			prod.Commit(k)
			written += uint64(k)
		case 1, 3: // peek n, release all (1) or half (3) of it
			b, err := cons.Peek(ctx, n)
			if skip.to > 0 && read == skip.from {
				read, skip.to = skip.to, 0 // the consumer jumps the gap
			}
			avail := len(model)
			if skip.to > 0 {
				avail = int(skip.from - read)
			}
			if avail == 0 {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("peek on an empty ring: %d bytes, %v", len(b), err)
				}
				continue
			}
			want := min(avail, capacity-int(read%capacity), n)
			if err != nil || len(b) != want {
				t.Fatalf("peek %d with %d buffered at %d: got %d bytes, %v; want %d", n, len(model), read, len(b), err, want)
			}
			if !bytes.Equal(b, model[:len(b)]) {
				t.Fatalf("peek at %d: bytes differ from what was committed", read)
			}
			k := len(b)
			if op == 3 {
				k /= 2
			}
			cons.Release(k)
			model = model[k:]
			read += uint64(k)
		}
		if got := prod.Buffered(); got != int(written-read) {
			t.Fatalf("Buffered %d, model %d", got, written-read)
		}
	}
}
