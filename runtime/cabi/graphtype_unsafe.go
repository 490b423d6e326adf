//go:build cgo

package main

import (
	"unsafe"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// graphType records the collectives of one element type on a graph, over
// C memory, as elemType runs them: the graph keeps the slices, so the
// memory must outlive it (hccl.h says so).
type graphType struct {
	allReduce     func(g *hccl.Graph, c *hccl.Comm, send, recv unsafe.Pointer, n int, op hccl.ReduceOp) error
	broadcast     func(g *hccl.Graph, c *hccl.Comm, send, recv unsafe.Pointer, n, root int) error
	reduce        func(g *hccl.Graph, c *hccl.Comm, send, recv unsafe.Pointer, n int, op hccl.ReduceOp, root int) error
	allGather     func(g *hccl.Graph, c *hccl.Comm, send, recv unsafe.Pointer, n int) error
	reduceScatter func(g *hccl.Graph, c *hccl.Comm, send, recv unsafe.Pointer, n int, op hccl.ReduceOp) error
	alltoAll      func(g *hccl.Graph, c *hccl.Comm, send, recv unsafe.Pointer, n int) error
	alltoAllV     func(g *hccl.Graph, c *hccl.Comm, send unsafe.Pointer, sc, sd []int, recv unsafe.Pointer, rc, rd []int) error
}

func graphTyped[T hccl.Element]() *graphType {
	return &graphType{
		allReduce: func(g *hccl.Graph, c *hccl.Comm, send, recv unsafe.Pointer, n int, op hccl.ReduceOp) error {
			s, r, err := pair[T](c, "GraphAllReduce", send, n, recv, n)
			if err != nil {
				return err
			}
			return hccl.GraphAllReduce(g, s, r, op)
		},
		broadcast: func(g *hccl.Graph, c *hccl.Comm, send, recv unsafe.Pointer, n, root int) error {
			// The out-of-place form copies the root's sendbuff before the
			// broadcast, which a replay would have to do at that point of
			// the graph. It is refused on every rank, not on the root
			// only, so that no rank goes on to a Compile the root never
			// joins.
			if send != recv {
				return invalidArg(c, "GraphBroadcast", "sendbuff is not recvbuff: a graph records Broadcast in place only")
			}
			_, r, err := pair[T](c, "GraphBroadcast", nil, 0, recv, n)
			if err != nil {
				return err
			}
			return hccl.GraphBroadcast(g, r, root)
		},
		reduce: func(g *hccl.Graph, c *hccl.Comm, send, recv unsafe.Pointer, n int, op hccl.ReduceOp, root int) error {
			rn := 0
			if c.Rank() == root {
				rn = n
			}
			s, r, err := pair[T](c, "GraphReduce", send, n, recv, rn)
			if err != nil {
				return err
			}
			return hccl.GraphReduce(g, s, r, op, root)
		},
		allGather: func(g *hccl.Graph, c *hccl.Comm, send, recv unsafe.Pointer, n int) error {
			s, r, err := pair[T](c, "GraphAllGather", send, n, recv, n*c.Size())
			if err != nil {
				return err
			}
			return hccl.GraphAllGather(g, s, r)
		},
		reduceScatter: func(g *hccl.Graph, c *hccl.Comm, send, recv unsafe.Pointer, n int, op hccl.ReduceOp) error {
			s, r, err := pair[T](c, "GraphReduceScatter", send, n*c.Size(), recv, n)
			if err != nil {
				return err
			}
			return hccl.GraphReduceScatter(g, s, r, op)
		},
		alltoAll: func(g *hccl.Graph, c *hccl.Comm, send, recv unsafe.Pointer, n int) error {
			s, r, err := pair[T](c, "GraphAlltoAll", send, n*c.Size(), recv, n*c.Size())
			if err != nil {
				return err
			}
			return hccl.GraphAlltoAll(g, s, r)
		},
		alltoAllV: func(g *hccl.Graph, c *hccl.Comm, send unsafe.Pointer, sc, sd []int, recv unsafe.Pointer, rc, rd []int) error {
			s, r, err := pair[T](c, "GraphAlltoAllV", send, extent(sc, sd), recv, extent(rc, rd))
			if err != nil {
				return err
			}
			return hccl.GraphAlltoAllV(g, s, sc, sd, r, rc, rd)
		},
	}
}
