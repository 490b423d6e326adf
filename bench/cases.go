package bench

import (
	"context"
	"fmt"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// A benchCase is one collective at one size and placement on one rank: the
// buffers the call gets, how to lay the inputs out, and how to count the
// wrong elements of the result. It knows nothing of the communicator but
// its shape (n ranks, this one r), so tests can build every rank's case in
// one process and move the data themselves.
type benchCase[T hccl.Element] struct {
	coll    Coll
	n, r    int
	root    int
	op      hccl.ReduceOp
	inPlace bool
	// send and recv are what the call gets: in place they overlap as the
	// collective's in-place form wants. Broadcast uses recv only; Reduce
	// has recv nil off the root.
	send, recv     []T
	sc, sd, rc, rd []int // AlltoAllV counts and displacements

	fill  func()       // inputs from the pattern, outputs set to the sentinel 0
	check func() int64 // wrong elements of this rank's result (after fill and one run)
}

// run makes the call on comm.
func (c *benchCase[T]) run(ctx context.Context, comm *hccl.Comm) error {
	switch c.coll {
	case AllReduce:
		return hccl.AllReduce(ctx, comm, c.send, c.recv, c.op)
	case AllGather:
		return hccl.AllGather(ctx, comm, c.send, c.recv)
	case ReduceScatter:
		return hccl.ReduceScatter(ctx, comm, c.send, c.recv, c.op)
	case AlltoAll:
		return hccl.AlltoAll(ctx, comm, c.send, c.recv)
	case AlltoAllV:
		return hccl.AlltoAllV(ctx, comm, c.send, c.sc, c.sd, c.recv, c.rc, c.rd)
	case Broadcast:
		return hccl.Broadcast(ctx, comm, c.recv, c.root)
	case Reduce:
		return hccl.Reduce(ctx, comm, c.send, c.recv, c.op, c.root)
	}
	return fmt.Errorf("bench: no call for %v", c.coll)
}

// newCase builds rank r's case (of n) for layout l over the big buffers
// sendBuf and recvBuf (each at least max(l.SendCount, l.RecvCount) long).
// In place, only recvBuf is used, laid out as the collective's in-place
// form wants: the whole buffer for AllReduce and Reduce, this rank's block
// of the output for AllGather, this rank's block of the input for
// ReduceScatter. Broadcast has one buffer in the runtime (as in MPI): out
// of place it is recvBuf, in place sendBuf, so both placements make the
// same call on different memory.
func newCase[T hccl.Element](n, r int, l Layout, inPlace bool, d DType, op RedOp, root int, sendBuf, recvBuf []T) *benchCase[T] {
	k := l.Count
	conv := converter[T]()
	opName := "sum"
	if l.Coll.Reduces() {
		opName = op.Name
	}
	p := newPattern(d, n, opName)
	zero := func(int) int64 { return 0 }
	mine := func(i int) int64 { return p.value(r, i) }
	c := &benchCase[T]{coll: l.Coll, n: n, r: r, root: root, op: op.op, inPlace: inPlace}
	// The common fill: the output to the sentinel, then the input from the
	// pattern (in place, the input overwrites its part of the output).
	c.fill = func() {
		fillWith(c.recv, conv, zero)
		fillWith(c.send, conv, mine)
	}

	switch l.Coll {
	case AllReduce:
		c.send, c.recv = sendBuf[:k], recvBuf[:k]
		if inPlace {
			c.send = c.recv
		}
		c.check = func() int64 { return countWrong(c.recv, conv, p.reduced) }

	case AllGather:
		c.send, c.recv = sendBuf[:k], recvBuf[:n*k]
		if inPlace {
			c.send = c.recv[r*k : (r+1)*k]
		}
		c.check = func() int64 {
			var wrong int64
			for s := range n {
				wrong += countWrong(c.recv[s*k:(s+1)*k], conv, func(i int) int64 { return p.value(s, i) })
			}
			return wrong
		}

	case ReduceScatter:
		c.send, c.recv = sendBuf[:n*k], recvBuf[:k]
		if inPlace {
			c.send = recvBuf[:n*k]
			c.recv = c.send[r*k : (r+1)*k]
		}
		c.check = func() int64 { return countWrong(c.recv, conv, func(i int) int64 { return p.reduced(r*k + i) }) }

	case AlltoAll:
		// Element i of the block for rank j is p.value(r, j*k+i), so the
		// receiver r finds sender s's block at s*k holding p.value(s, r*k+i).
		c.send, c.recv = sendBuf[:n*k], recvBuf[:n*k]
		c.check = func() int64 {
			var wrong int64
			for s := range n {
				wrong += countWrong(c.recv[s*k:(s+1)*k], conv, func(i int) int64 { return p.value(s, r*k+i) })
			}
			return wrong
		}

	case AlltoAllV:
		v := newVCounts(n, k)
		c.sc, c.sd = v.sendLayout(r)
		c.rc, c.rd = v.recvLayout(r)
		c.send, c.recv = sendBuf[:v.total], recvBuf[:v.total]
		// The block from sender s starts at rd[s] here and held
		// p.value(s, sd_s[r]+i) there, sd_s being s's send displacements.
		c.check = func() int64 {
			var wrong int64
			for s := range n {
				_, sds := v.sendLayout(s)
				blk := c.recv[c.rd[s] : c.rd[s]+c.rc[s]]
				wrong += countWrong(blk, conv, func(i int) int64 { return p.value(s, sds[r]+i) })
			}
			return wrong
		}

	case Broadcast:
		c.recv = recvBuf[:k]
		if inPlace {
			c.recv = sendBuf[:k]
		}
		c.fill = func() {
			if r == root {
				fillWith(c.recv, conv, func(i int) int64 { return p.value(root, i) })
			} else {
				fillWith(c.recv, conv, zero)
			}
		}
		c.check = func() int64 { return countWrong(c.recv, conv, func(i int) int64 { return p.value(root, i) }) }

	case Reduce:
		c.send, c.recv = sendBuf[:k], recvBuf[:k]
		if inPlace {
			c.send = c.recv
		}
		if r != root {
			c.recv = nil
		}
		c.check = func() int64 { return countWrong(c.recv, conv, p.reduced) }
	}
	return c
}
