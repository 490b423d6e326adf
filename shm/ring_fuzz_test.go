package shm

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// FuzzRing drives one ring through a random sequence of reservations,
// commits, peeks and releases, in one goroutine, and checks every result
// against a model (a plain byte queue): the sizes of reservations and
// peeks at the wrap and when full or empty, and the bytes that come out.
// Blocking calls get a cancelled context, so a full or empty ring answers
// with the context's error instead of waiting.
func FuzzRing(f *testing.F) {
	f.Add([]byte{0, 200, 1, 150, 0, 255, 1, 255, 0, 100, 1, 7})
	f.Add([]byte{2, 255, 2, 255, 3, 255, 3, 255})
	f.Add(bytes.Repeat([]byte{0, 99, 1, 98}, 16))
	f.Fuzz(fuzzBody)
}

func fuzzBody(t *testing.T, ops []byte) {
	if len(ops) > 8192 {
		ops = ops[:8192] // longer inputs find nothing new, only take time
	}
	const capacity = MinRingCapacity
	mem := make([]byte, RingBytes(capacity))
	prod, err := NewRing(mem, capacity, WaitPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := OpenRing(mem, WaitPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var model []byte
	var written, read uint64 // absolute positions, as the ring counts
	next := byte(0)
	for len(ops) >= 2 {
		op, n := ops[0]%4, int(ops[1])+1
		ops = ops[2:]
		switch op {
		case 0, 2: // reserve n, commit all (0) or half (2) of it
			free := capacity - len(model)
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
			if len(model) == 0 {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("peek on an empty ring: %d bytes, %v", len(b), err)
				}
				continue
			}
			want := min(len(model), capacity-int(read%capacity), n)
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
		if got := prod.Buffered(); got != len(model) {
			t.Fatalf("Buffered %d, model %d", got, len(model))
		}
	}
}
