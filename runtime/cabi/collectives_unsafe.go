package main

/*
#define HCCL_COMM_AS_HANDLE
#define HCCL_NO_PROTOTYPES
#include "hccl.h"
*/
import "C"

import (
	"math"
	"unsafe"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// typeOf returns the element type dt names.
func typeOf(c *comm, op string, dt C.hcclDataType_t) (*elemType, error) {
	if uint64(dt) >= uint64(len(elemTypes)) {
		return nil, invalidArg(c.Comm, op, "unknown datatype %d (hcclDataType_t runs from 0 to %d)", uint64(dt), len(elemTypes)-1)
	}
	return elemTypes[dt], nil
}

// typed looks up dt and converts count, of which a buffer holds times.
func (c *comm) typed(op string, dt C.hcclDataType_t, count C.size_t, times int) (*elemType, int, error) {
	t, err := typeOf(c, op, dt)
	if err != nil {
		return nil, 0, err
	}
	n, err := elems(c.Comm, op, uint64(count), t.size, times)
	return t, n, err
}

//export hcclAllReduce
func hcclAllReduce(send, recv unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, op C.hcclRedOp_t, h C.hcclComm_t) C.hcclResult_t {
	return run(h, "AllReduce", func(c *comm) error {
		t, n, err := c.typed("AllReduce", dt, count, 1)
		if err != nil {
			return err
		}
		return t.allReduce(c.Comm, send, recv, n, hccl.ReduceOp(op))
	})
}

//export hcclBroadcast
func hcclBroadcast(send, recv unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, root C.int, h C.hcclComm_t) C.hcclResult_t {
	return run(h, "Broadcast", func(c *comm) error {
		t, n, err := c.typed("Broadcast", dt, count, 1)
		if err != nil {
			return err
		}
		if root < 0 || int(root) >= c.Size() {
			return invalidArg(c.Comm, "Broadcast", "root %d is not a rank of %d", int(root), c.Size())
		}
		return t.broadcast(c.Comm, send, recv, n, int(root))
	})
}

//export hcclBcast
func hcclBcast(buf unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, root C.int, h C.hcclComm_t) C.hcclResult_t {
	return hcclBroadcast(buf, buf, count, dt, root, h)
}

//export hcclReduce
func hcclReduce(send, recv unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, op C.hcclRedOp_t, root C.int, h C.hcclComm_t) C.hcclResult_t {
	return run(h, "Reduce", func(c *comm) error {
		t, n, err := c.typed("Reduce", dt, count, 1)
		if err != nil {
			return err
		}
		if root < 0 || int(root) >= c.Size() {
			return invalidArg(c.Comm, "Reduce", "root %d is not a rank of %d", int(root), c.Size())
		}
		return t.reduce(c.Comm, send, recv, n, hccl.ReduceOp(op), int(root))
	})
}

//export hcclAllGather
func hcclAllGather(send, recv unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, h C.hcclComm_t) C.hcclResult_t {
	return run(h, "AllGather", func(c *comm) error {
		t, n, err := c.typed("AllGather", dt, count, c.Size())
		if err != nil {
			return err
		}
		return t.allGather(c.Comm, send, recv, n)
	})
}

//export hcclReduceScatter
func hcclReduceScatter(send, recv unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, op C.hcclRedOp_t, h C.hcclComm_t) C.hcclResult_t {
	return run(h, "ReduceScatter", func(c *comm) error {
		t, n, err := c.typed("ReduceScatter", dt, count, c.Size())
		if err != nil {
			return err
		}
		return t.reduceScatter(c.Comm, send, recv, n, hccl.ReduceOp(op))
	})
}

//export hcclAlltoAll
func hcclAlltoAll(send, recv unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, h C.hcclComm_t) C.hcclResult_t {
	return run(h, "AlltoAll", func(c *comm) error {
		t, n, err := c.typed("AlltoAll", dt, count, c.Size())
		if err != nil {
			return err
		}
		return t.alltoAll(c.Comm, send, recv, n)
	})
}

//export hcclAlltoAllV
func hcclAlltoAllV(send unsafe.Pointer, sendCounts, sdispls *C.size_t, recv unsafe.Pointer,
	recvCounts, rdispls *C.size_t, dt C.hcclDataType_t, h C.hcclComm_t) C.hcclResult_t {
	return run(h, "AlltoAllV", func(c *comm) error {
		t, err := typeOf(c, "AlltoAllV", dt)
		if err != nil {
			return err
		}
		v, err := c.vcounts("AlltoAllV", t, sendCounts, sdispls, recvCounts, rdispls)
		if err != nil {
			return err
		}
		return t.alltoAllV(c.Comm, send, v[0], v[1], recv, v[2], v[3])
	})
}

// vcounts copies AlltoAllV's four arrays of c.Size() counts and
// displacements of t's elements into Go.
func (c *comm) vcounts(op string, t *elemType, sendCounts, sdispls, recvCounts, rdispls *C.size_t) ([4][]int, error) {
	// Each count and displacement below half the address space, so
	// that no block's end overflows.
	limit := uint64(math.MaxInt / t.size / 2)
	var arrays [4][]int
	for i, a := range []struct {
		name string
		p    *C.size_t
	}{{"sendcounts", sendCounts}, {"sdispls", sdispls}, {"recvcounts", recvCounts}, {"rdispls", rdispls}} {
		if a.p == nil {
			return arrays, invalidArg(c.Comm, op, "%s is NULL", a.name)
		}
		arrays[i] = make([]int, c.Size())
		for j, v := range unsafe.Slice(a.p, c.Size()) {
			if uint64(v) > limit {
				return arrays, invalidArg(c.Comm, op, "%s[%d] = %d overflows the address space", a.name, j, uint64(v))
			}
			arrays[i][j] = int(v)
		}
	}
	return arrays, nil
}

//export hcclSend
func hcclSend(buf unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, peer C.int, h C.hcclComm_t) C.hcclResult_t {
	return run(h, "Send", func(c *comm) error {
		t, n, err := c.typed("Send", dt, count, 1)
		if err != nil {
			return err
		}
		return t.send(c.Comm, buf, n, int(peer))
	})
}

//export hcclRecv
func hcclRecv(buf unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, peer C.int, h C.hcclComm_t) C.hcclResult_t {
	return run(h, "Recv", func(c *comm) error {
		t, n, err := c.typed("Recv", dt, count, 1)
		if err != nil {
			return err
		}
		return t.recv(c.Comm, buf, n, int(peer))
	})
}

//export hcclBarrier
func hcclBarrier(h C.hcclComm_t) C.hcclResult_t {
	return run(h, "Barrier", func(c *comm) error { return c.Barrier(background) })
}
