package main

/*
#define HCCL_COMM_AS_HANDLE
#define HCCL_NO_PROTOTYPES
#include "hccl.h"
*/
import "C"

import (
	"fmt"
	"sync"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// The communicators C holds, by handle (newHandle: never reused, so that
// a destroyed one is told apart from a live one; 0 is NULL).
var comms struct {
	sync.Mutex
	live  map[uint64]*comm
	freed map[uint64]bool
}

// comm is one communicator and the message of its last failure.
type comm struct {
	*hccl.Comm
	lastErr message
}

func register(c *hccl.Comm) C.hcclComm_t {
	comms.Lock()
	defer comms.Unlock()
	if comms.live == nil {
		comms.live, comms.freed = map[uint64]*comm{}, map[uint64]bool{}
	}
	h := newHandle()
	comms.live[h] = &comm{Comm: c}
	return C.hcclComm_t(h)
}

// lookup returns the communicator of h, or an error that says why h is none.
func lookup(h C.hcclComm_t) (*comm, error) {
	comms.Lock()
	defer comms.Unlock()
	id := uint64(h)
	if c := comms.live[id]; c != nil {
		return c, nil
	}
	switch {
	case id == 0:
		return nil, fmt.Errorf("%w: comm is NULL", hccl.ErrInvalidArgument)
	case comms.freed[id]:
		return nil, fmt.Errorf("%w: comm was destroyed", hccl.ErrClosed)
	}
	return nil, fmt.Errorf("%w: comm %#x is not a communicator hcclCommInitFromEnv made", hccl.ErrInvalidArgument, id)
}

// unregister takes h out of the table; later lookups say it was destroyed.
func unregister(h C.hcclComm_t) {
	comms.Lock()
	defer comms.Unlock()
	delete(comms.live, uint64(h))
	comms.freed[uint64(h)] = true
}
