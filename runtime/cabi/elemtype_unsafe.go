//go:build cgo

package main

import (
	"context"
	"fmt"
	"math"
	"unsafe"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// elemType runs the collectives of one element type over C memory: each
// makes Go slices of the caller's buffers, without copying them, and calls
// the Go collective of that type. Counts were checked against overflow
// (elems) before; the buffers' NULL-ness is checked here, where their
// lengths are known.
type elemType struct {
	name string
	size int

	allReduce     func(c *hccl.Comm, send, recv unsafe.Pointer, n int, op hccl.ReduceOp) error
	broadcast     func(c *hccl.Comm, send, recv unsafe.Pointer, n, root int) error
	reduce        func(c *hccl.Comm, send, recv unsafe.Pointer, n int, op hccl.ReduceOp, root int) error
	allGather     func(c *hccl.Comm, send, recv unsafe.Pointer, n int) error
	reduceScatter func(c *hccl.Comm, send, recv unsafe.Pointer, n int, op hccl.ReduceOp) error
	alltoAll      func(c *hccl.Comm, send, recv unsafe.Pointer, n int) error
	alltoAllV     func(c *hccl.Comm, send unsafe.Pointer, sc, sd []int, recv unsafe.Pointer, rc, rd []int) error
	send, recv    func(c *hccl.Comm, buf unsafe.Pointer, n, peer int) error

	graph *graphType // the same collectives recorded on a graph
}

// elemTypes is indexed by hcclDataType_t.
var elemTypes = [...]*elemType{
	0: typed[int8]("hcclInt8"), 1: typed[uint8]("hcclUint8"),
	2: typed[int32]("hcclInt32"), 3: typed[uint32]("hcclUint32"),
	4: typed[int64]("hcclInt64"), 5: typed[uint64]("hcclUint64"),
	6: typed[hccl.Float16]("hcclFloat16"), 7: typed[float32]("hcclFloat32"),
	8: typed[float64]("hcclFloat64"), 9: typed[hccl.BFloat16]("hcclBfloat16"),
	10: typed[int16]("hcclInt16"), 11: typed[uint16]("hcclUint16"),
}

// The calls block as the Go API does; HCCL_EXEC_TIMEOUT bounds them.
var background = context.Background()

func typed[T hccl.Element](name string) *elemType {
	var zero T
	return &elemType{
		name: name, size: int(unsafe.Sizeof(zero)), graph: graphTyped[T](),
		allReduce: func(c *hccl.Comm, send, recv unsafe.Pointer, n int, op hccl.ReduceOp) error {
			s, r, err := pair[T](c, "AllReduce", send, n, recv, n)
			if err != nil {
				return err
			}
			return hccl.AllReduce(background, c, s, r, op)
		},
		broadcast: func(c *hccl.Comm, send, recv unsafe.Pointer, n, root int) error {
			if c.Rank() != root || send == recv {
				_, r, err := pair[T](c, "Broadcast", nil, 0, recv, n)
				if err != nil {
					return err
				}
				return hccl.Broadcast(background, c, r, root)
			}
			s, r, err := pair[T](c, "Broadcast", send, n, recv, n)
			if err != nil {
				return err
			}
			copy(r, s) // NCCL's out-of-place form: the root's recvbuff gets its sendbuff too
			return hccl.Broadcast(background, c, r, root)
		},
		reduce: func(c *hccl.Comm, send, recv unsafe.Pointer, n int, op hccl.ReduceOp, root int) error {
			rn := 0
			if c.Rank() == root {
				rn = n
			}
			s, r, err := pair[T](c, "Reduce", send, n, recv, rn)
			if err != nil {
				return err
			}
			return hccl.Reduce(background, c, s, r, op, root)
		},
		allGather: func(c *hccl.Comm, send, recv unsafe.Pointer, n int) error {
			s, r, err := pair[T](c, "AllGather", send, n, recv, n*c.Size())
			if err != nil {
				return err
			}
			return hccl.AllGather(background, c, s, r)
		},
		reduceScatter: func(c *hccl.Comm, send, recv unsafe.Pointer, n int, op hccl.ReduceOp) error {
			s, r, err := pair[T](c, "ReduceScatter", send, n*c.Size(), recv, n)
			if err != nil {
				return err
			}
			return hccl.ReduceScatter(background, c, s, r, op)
		},
		alltoAll: func(c *hccl.Comm, send, recv unsafe.Pointer, n int) error {
			s, r, err := pair[T](c, "AlltoAll", send, n*c.Size(), recv, n*c.Size())
			if err != nil {
				return err
			}
			return hccl.AlltoAll(background, c, s, r)
		},
		alltoAllV: func(c *hccl.Comm, send unsafe.Pointer, sc, sd []int, recv unsafe.Pointer, rc, rd []int) error {
			s, r, err := pair[T](c, "AlltoAllV", send, extent(sc, sd), recv, extent(rc, rd))
			if err != nil {
				return err
			}
			return hccl.AlltoAllV(background, c, s, sc, sd, r, rc, rd)
		},
		send: func(c *hccl.Comm, buf unsafe.Pointer, n, peer int) error {
			b, _, err := pair[T](c, "Send", buf, n, nil, 0)
			if err != nil {
				return err
			}
			return hccl.Send(background, c, b, peer)
		},
		recv: func(c *hccl.Comm, buf unsafe.Pointer, n, peer int) error {
			_, b, err := pair[T](c, "Recv", nil, 0, buf, n)
			if err != nil {
				return err
			}
			return hccl.Recv(background, c, b, peer)
		},
	}
}

// pair makes the slices of a call's send and receive buffers, of sn and
// rn elements; a NULL buffer is an error unless its length is 0.
func pair[T hccl.Element](c *hccl.Comm, op string, send unsafe.Pointer, sn int, recv unsafe.Pointer, rn int) (s, r []T, err error) {
	if send == nil && sn > 0 {
		return nil, nil, invalidArg(c, op, "sendbuff is NULL for %d elements", sn)
	}
	if recv == nil && rn > 0 {
		return nil, nil, invalidArg(c, op, "recvbuff is NULL for %d elements", rn)
	}
	if sn > 0 {
		s = unsafe.Slice((*T)(send), sn)
	}
	if rn > 0 {
		r = unsafe.Slice((*T)(recv), rn)
	}
	return s, r, nil
}

// extent is how many elements a buffer of AlltoAllV blocks spans: the end
// of its last block. The runtime checks the blocks themselves.
func extent(counts, displs []int) int {
	end := 0
	for j := range counts {
		if e := displs[j] + counts[j]; e > end {
			end = e
		}
	}
	return end
}

// elems converts a C count of elements of size bytes, of which a buffer
// holds times, to an int, refusing what the address space cannot hold.
func elems(c *hccl.Comm, op string, count uint64, size, times int) (int, error) {
	if times < 1 {
		times = 1
	}
	if count > uint64(math.MaxInt/size/times) {
		return 0, invalidArg(c, op, "count %d of %d-byte elements (times %d ranks) overflows the address space", count, size, times)
	}
	return int(count), nil
}

// invalidArg is an argument error found here, named as the runtime's are.
func invalidArg(c *hccl.Comm, op, format string, args ...any) error {
	return named(op, c.Rank(), fmt.Errorf("%w: %s", hccl.ErrInvalidArgument, fmt.Sprintf(format, args...)))
}
