//go:build cgo

package main

import (
	"fmt"
	"sync"
	"sync/atomic"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// lastHandle numbers every handle the library gives out, of every kind,
// so that one kind's handle passed for another's is not a live handle of
// the wrong thing but an error; never reused, 0 is NULL.
var lastHandle atomic.Uint64

func newHandle() uint64 { return lastHandle.Add(1) }

// table holds the live objects of one kind of handle (graphs, execs), as
// comms does communicators: a destroyed handle is told apart from one
// never made, and neither is dereferenced.
type table[T any] struct {
	mu    sync.Mutex
	kind  string // "graph", in errors
	maker string // the call that makes one, in errors
	live  map[uint64]*T
	freed map[uint64]bool
}

func (t *table[T]) add(v *T) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.live == nil {
		t.live, t.freed = map[uint64]*T{}, map[uint64]bool{}
	}
	h := newHandle()
	t.live[h] = v
	return h
}

// get returns the object of h, or an error that says why h is none.
func (t *table[T]) get(h uint64) (*T, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v := t.live[h]; v != nil {
		return v, nil
	}
	switch {
	case h == 0:
		return nil, fmt.Errorf("%w: %s is NULL", hccl.ErrInvalidArgument, t.kind)
	case t.freed[h]:
		return nil, fmt.Errorf("%w: %s was destroyed", hccl.ErrClosed, t.kind)
	}
	return nil, fmt.Errorf("%w: %s %#x is not one %s made", hccl.ErrInvalidArgument, t.kind, h, t.maker)
}

// remove takes h out of the table and returns its object; later gets say
// it was destroyed.
func (t *table[T]) remove(h uint64) (*T, error) {
	v, err := t.get(h)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.live[h] != v { // destroyed by another thread meanwhile
		return nil, fmt.Errorf("%w: %s was destroyed", hccl.ErrClosed, t.kind)
	}
	delete(t.live, h)
	t.freed[h] = true
	return v, nil
}
