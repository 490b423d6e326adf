package runtime

import (
	"context"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// The collectives. Each validates its arguments on this rank (a bad call
// fails with ErrInvalidArgument before anything is sent), then runs through
// Comm.run. Counts are in elements. All of them block until this rank's
// part is done, and are bounded by ctx and HCCL_EXEC_TIMEOUT.

// AllReduce stores in recv the elementwise reduction with op of every
// rank's send. len(send) == len(recv); send and recv may be the same slice.
func AllReduce[T Element](ctx context.Context, c *Comm, send, recv []T, op ReduceOp) error {
	dt := dtypeOf[T]()
	if err := c.checkOp(plan.AllReduce, dt, op); err != nil {
		return err
	}
	if len(send) != len(recv) {
		return c.invalid(plan.AllReduce, "len(send) = %d but len(recv) = %d", len(send), len(recv))
	}
	inPlace := sameStart(send, recv)
	if !inPlace && overlap(send, recv) {
		return c.invalid(plan.AllReduce, "send and recv overlap without being the same slice")
	}
	r := asBytes(recv)
	return c.run(ctx, &call{
		req:   plan.Request{Coll: plan.AllReduce, Count: len(send), InPlace: inPlace},
		dtype: dt, op: op, reduces: true,
		send: asBytes(send), recv: r, avgSlice: r,
	})
}

// Broadcast copies root's buf into every other rank's buf.
func Broadcast[T Element](ctx context.Context, c *Comm, buf []T, root int) error {
	if root < 0 || root >= c.Size() {
		return c.invalid(plan.Broadcast, "root %d is not a rank of %d", root, c.Size())
	}
	b := asBytes(buf)
	return c.run(ctx, &call{
		req:   plan.Request{Coll: plan.Broadcast, Count: len(buf), Root: root, InPlace: true},
		dtype: dtypeOf[T](), send: b, recv: b,
	})
}

// Reduce stores in root's recv the elementwise reduction with op of every
// rank's send. recv is used on root only (len(recv) == len(send) there);
// other ranks may pass nil. On root, send and recv may be the same slice.
func Reduce[T Element](ctx context.Context, c *Comm, send, recv []T, op ReduceOp, root int) error {
	dt := dtypeOf[T]()
	if err := c.checkOp(plan.Reduce, dt, op); err != nil {
		return err
	}
	if root < 0 || root >= c.Size() {
		return c.invalid(plan.Reduce, "root %d is not a rank of %d", root, c.Size())
	}
	inPlace := false
	if c.Rank() == root {
		if len(recv) != len(send) {
			return c.invalid(plan.Reduce, "on the root len(recv) = %d but len(send) = %d", len(recv), len(send))
		}
		inPlace = sameStart(send, recv)
		if !inPlace && overlap(send, recv) {
			return c.invalid(plan.Reduce, "send and recv overlap without being the same slice")
		}
	} else {
		recv = nil
	}
	r := asBytes(recv)
	return c.run(ctx, &call{
		req:   plan.Request{Coll: plan.Reduce, Count: len(send), Root: root, InPlace: inPlace},
		dtype: dt, op: op, reduces: true,
		send: asBytes(send), recv: r, avgSlice: r,
	})
}

// AllGather stores every rank's send in recv, rank i's at
// recv[i*len(send):]. len(recv) == Size()*len(send). In place: send is
// recv[Rank()*len(send):(Rank()+1)*len(send)].
func AllGather[T Element](ctx context.Context, c *Comm, send, recv []T) error {
	n := len(send)
	if len(recv) != c.Size()*n {
		return c.invalid(plan.AllGather, "len(recv) = %d, want Size()*len(send) = %d*%d", len(recv), c.Size(), n)
	}
	inPlace := n > 0 && sameStart(send, recv[c.Rank()*n:])
	if !inPlace && overlap(send, recv) {
		return c.invalid(plan.AllGather, "send overlaps recv without being recv's block of this rank")
	}
	return c.run(ctx, &call{
		req:   plan.Request{Coll: plan.AllGather, Count: n, InPlace: inPlace},
		dtype: dtypeOf[T](), send: asBytes(send), recv: asBytes(recv),
	})
}

// ReduceScatter reduces every rank's send with op and stores block i of
// the result (len(recv) elements) in rank i's recv. len(send) ==
// Size()*len(recv). In place: recv is send[Rank()*len(recv):].
func ReduceScatter[T Element](ctx context.Context, c *Comm, send, recv []T, op ReduceOp) error {
	dt := dtypeOf[T]()
	if err := c.checkOp(plan.ReduceScatter, dt, op); err != nil {
		return err
	}
	n := len(recv)
	if len(send) != c.Size()*n {
		return c.invalid(plan.ReduceScatter, "len(send) = %d, want Size()*len(recv) = %d*%d", len(send), c.Size(), n)
	}
	inPlace := n > 0 && sameStart(recv, send[c.Rank()*n:])
	if !inPlace && overlap(send, recv) {
		return c.invalid(plan.ReduceScatter, "recv overlaps send without being send's block of this rank")
	}
	r := asBytes(recv)
	return c.run(ctx, &call{
		req:   plan.Request{Coll: plan.ReduceScatter, Count: n, InPlace: inPlace},
		dtype: dt, op: op, reduces: true,
		send: asBytes(send), recv: r, avgSlice: r,
	})
}

// AlltoAll sends block j of send (len(send)/Size() elements) to rank j,
// which stores it as block i of its recv, i being the sender.
// len(send) == len(recv), a multiple of Size(); they must not overlap.
func AlltoAll[T Element](ctx context.Context, c *Comm, send, recv []T) error {
	if len(send) != len(recv) || len(send)%c.Size() != 0 {
		return c.invalid(plan.AlltoAll, "len(send) = %d and len(recv) = %d, want equal multiples of Size() = %d", len(send), len(recv), c.Size())
	}
	if overlap(send, recv) {
		return c.invalid(plan.AlltoAll, "send and recv overlap (in-place AlltoAll is not supported)")
	}
	return c.run(ctx, &call{
		req:   plan.Request{Coll: plan.AlltoAll, Count: len(send) / c.Size()},
		dtype: dtypeOf[T](), send: asBytes(send), recv: asBytes(recv),
	})
}

// AlltoAllV sends send[sdispls[j]:sdispls[j]+sendCounts[j]] to rank j, which
// stores it at recv[rdispls[i]:rdispls[i]+recvCounts[i]], i being the sender.
// Counts and displacements are in elements, one per rank; rank i's
// sendCounts[j] must equal rank j's recvCounts[i]. Receive ranges must not
// overlap, and send and recv must not overlap (no in-place, as in HCCL).
func AlltoAllV[T Element](ctx context.Context, c *Comm, send []T, sendCounts, sdispls []int,
	recv []T, recvCounts, rdispls []int) error {
	if err := c.checkV(len(send), sendCounts, sdispls, len(recv), recvCounts, rdispls); err != nil {
		return err
	}
	if overlap(send, recv) {
		return c.invalid(plan.AlltoAllV, "send and recv overlap (in-place AlltoAllV is not supported)")
	}
	return c.run(ctx, &call{
		req: plan.Request{Coll: plan.AlltoAllV,
			SendCounts: sendCounts, SendDispls: sdispls, RecvCounts: recvCounts, RecvDispls: rdispls},
		dtype: dtypeOf[T](), send: asBytes(send), recv: asBytes(recv),
	})
}

// Barrier returns once every rank has entered it.
func (c *Comm) Barrier(ctx context.Context) error {
	return c.run(ctx, &call{req: plan.Request{Coll: plan.Barrier}, dtype: dtypeOf[uint8]()})
}
