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
	a, err := allReduceCall(c, send, recv, op)
	if err != nil {
		return err
	}
	return c.run(ctx, &a)
}

// allReduceCall validates the arguments of AllReduce into a call.
func allReduceCall[T Element](c *Comm, send, recv []T, op ReduceOp) (call, error) {
	dt := dtypeOf[T]()
	if err := c.checkOp(plan.AllReduce, dt, op); err != nil {
		return call{}, err
	}
	if len(send) != len(recv) {
		return call{}, c.invalid(plan.AllReduce, "len(send) = %d but len(recv) = %d", len(send), len(recv))
	}
	inPlace := sameStart(send, recv)
	if !inPlace && overlap(send, recv) {
		return call{}, c.invalid(plan.AllReduce, "send and recv overlap without being the same slice")
	}
	r := asBytes(recv)
	return call{
		req:   plan.Request{Coll: plan.AllReduce, Count: len(send), InPlace: inPlace},
		dtype: dt, op: op, reduces: true,
		send: asBytes(send), recv: r, avgSlice: r,
	}, nil
}

// Broadcast copies root's buf into every other rank's buf.
func Broadcast[T Element](ctx context.Context, c *Comm, buf []T, root int) error {
	a, err := broadcastCall(c, buf, root)
	if err != nil {
		return err
	}
	return c.run(ctx, &a)
}

// broadcastCall validates the arguments of Broadcast into a call.
func broadcastCall[T Element](c *Comm, buf []T, root int) (call, error) {
	if root < 0 || root >= c.Size() {
		return call{}, c.invalid(plan.Broadcast, "root %d is not a rank of %d", root, c.Size())
	}
	b := asBytes(buf)
	return call{
		req:   plan.Request{Coll: plan.Broadcast, Count: len(buf), Root: root, InPlace: true},
		dtype: dtypeOf[T](), send: b, recv: b,
	}, nil
}

// Reduce stores in root's recv the elementwise reduction with op of every
// rank's send. recv is used on root only (len(recv) == len(send) there);
// other ranks may pass nil. On root, send and recv may be the same slice.
func Reduce[T Element](ctx context.Context, c *Comm, send, recv []T, op ReduceOp, root int) error {
	a, err := reduceCall(c, send, recv, op, root)
	if err != nil {
		return err
	}
	return c.run(ctx, &a)
}

// reduceCall validates the arguments of Reduce into a call.
func reduceCall[T Element](c *Comm, send, recv []T, op ReduceOp, root int) (call, error) {
	dt := dtypeOf[T]()
	if err := c.checkOp(plan.Reduce, dt, op); err != nil {
		return call{}, err
	}
	if root < 0 || root >= c.Size() {
		return call{}, c.invalid(plan.Reduce, "root %d is not a rank of %d", root, c.Size())
	}
	inPlace := false
	if c.Rank() == root {
		if len(recv) != len(send) {
			return call{}, c.invalid(plan.Reduce, "on the root len(recv) = %d but len(send) = %d", len(recv), len(send))
		}
		inPlace = sameStart(send, recv)
		if !inPlace && overlap(send, recv) {
			return call{}, c.invalid(plan.Reduce, "send and recv overlap without being the same slice")
		}
	} else {
		recv = nil
	}
	r := asBytes(recv)
	return call{
		req:   plan.Request{Coll: plan.Reduce, Count: len(send), Root: root, InPlace: inPlace},
		dtype: dt, op: op, reduces: true,
		send: asBytes(send), recv: r, avgSlice: r,
	}, nil
}

// AllGather stores every rank's send in recv, rank i's at
// recv[i*len(send):]. len(recv) == Size()*len(send). In place: send is
// recv[Rank()*len(send):(Rank()+1)*len(send)].
func AllGather[T Element](ctx context.Context, c *Comm, send, recv []T) error {
	a, err := allGatherCall(c, send, recv)
	if err != nil {
		return err
	}
	return c.run(ctx, &a)
}

// allGatherCall validates the arguments of AllGather into a call.
func allGatherCall[T Element](c *Comm, send, recv []T) (call, error) {
	n := len(send)
	if len(recv) != c.Size()*n {
		return call{}, c.invalid(plan.AllGather, "len(recv) = %d, want Size()*len(send) = %d*%d", len(recv), c.Size(), n)
	}
	inPlace := n > 0 && sameStart(send, recv[c.Rank()*n:])
	if !inPlace && overlap(send, recv) {
		return call{}, c.invalid(plan.AllGather, "send overlaps recv without being recv's block of this rank")
	}
	return call{
		req:   plan.Request{Coll: plan.AllGather, Count: n, InPlace: inPlace},
		dtype: dtypeOf[T](), send: asBytes(send), recv: asBytes(recv),
	}, nil
}

// ReduceScatter reduces every rank's send with op and stores block i of
// the result (len(recv) elements) in rank i's recv. len(send) ==
// Size()*len(recv). In place: recv is send[Rank()*len(recv):].
func ReduceScatter[T Element](ctx context.Context, c *Comm, send, recv []T, op ReduceOp) error {
	a, err := reduceScatterCall(c, send, recv, op)
	if err != nil {
		return err
	}
	return c.run(ctx, &a)
}

// reduceScatterCall validates the arguments of ReduceScatter into a call.
func reduceScatterCall[T Element](c *Comm, send, recv []T, op ReduceOp) (call, error) {
	dt := dtypeOf[T]()
	if err := c.checkOp(plan.ReduceScatter, dt, op); err != nil {
		return call{}, err
	}
	n := len(recv)
	if len(send) != c.Size()*n {
		return call{}, c.invalid(plan.ReduceScatter, "len(send) = %d, want Size()*len(recv) = %d*%d", len(send), c.Size(), n)
	}
	inPlace := n > 0 && sameStart(recv, send[c.Rank()*n:])
	if !inPlace && overlap(send, recv) {
		return call{}, c.invalid(plan.ReduceScatter, "recv overlaps send without being send's block of this rank")
	}
	r := asBytes(recv)
	return call{
		req:   plan.Request{Coll: plan.ReduceScatter, Count: n, InPlace: inPlace},
		dtype: dt, op: op, reduces: true,
		send: asBytes(send), recv: r, avgSlice: r,
	}, nil
}

// AlltoAll sends block j of send (len(send)/Size() elements) to rank j,
// which stores it as block i of its recv, i being the sender.
// len(send) == len(recv), a multiple of Size(); they must not overlap.
func AlltoAll[T Element](ctx context.Context, c *Comm, send, recv []T) error {
	a, err := alltoAllCall(c, send, recv)
	if err != nil {
		return err
	}
	return c.run(ctx, &a)
}

// alltoAllCall validates the arguments of AlltoAll into a call.
func alltoAllCall[T Element](c *Comm, send, recv []T) (call, error) {
	if len(send) != len(recv) || len(send)%c.Size() != 0 {
		return call{}, c.invalid(plan.AlltoAll, "len(send) = %d and len(recv) = %d, want equal multiples of Size() = %d", len(send), len(recv), c.Size())
	}
	if overlap(send, recv) {
		return call{}, c.invalid(plan.AlltoAll, "send and recv overlap (in-place AlltoAll is not supported)")
	}
	return call{
		req:   plan.Request{Coll: plan.AlltoAll, Count: len(send) / c.Size()},
		dtype: dtypeOf[T](), send: asBytes(send), recv: asBytes(recv),
	}, nil
}

// AlltoAllV sends send[sdispls[j]:sdispls[j]+sendCounts[j]] to rank j, which
// stores it at recv[rdispls[i]:rdispls[i]+recvCounts[i]], i being the sender.
// Counts and displacements are in elements, one per rank; rank i's
// sendCounts[j] must equal rank j's recvCounts[i]. Receive ranges must not
// overlap, and send and recv must not overlap (no in-place, as in HCCL).
func AlltoAllV[T Element](ctx context.Context, c *Comm, send []T, sendCounts, sdispls []int,
	recv []T, recvCounts, rdispls []int) error {
	a, err := alltoAllVCall(c, send, sendCounts, sdispls, recv, recvCounts, rdispls)
	if err != nil {
		return err
	}
	return c.run(ctx, &a)
}

// alltoAllVCall validates the arguments of AlltoAllV into a call.
func alltoAllVCall[T Element](c *Comm, send []T, sendCounts, sdispls []int,
	recv []T, recvCounts, rdispls []int) (call, error) {
	if err := c.checkV(len(send), sendCounts, sdispls, len(recv), recvCounts, rdispls); err != nil {
		return call{}, err
	}
	if overlap(send, recv) {
		return call{}, c.invalid(plan.AlltoAllV, "send and recv overlap (in-place AlltoAllV is not supported)")
	}
	return call{
		req: plan.Request{Coll: plan.AlltoAllV,
			SendCounts: sendCounts, SendDispls: sdispls, RecvCounts: recvCounts, RecvDispls: rdispls},
		dtype: dtypeOf[T](), send: asBytes(send), recv: asBytes(recv),
	}, nil
}

// Barrier returns once every rank has entered it.
func (c *Comm) Barrier(ctx context.Context) error {
	return c.run(ctx, &call{req: plan.Request{Coll: plan.Barrier}, dtype: dtypeOf[uint8]()})
}
