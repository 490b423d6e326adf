package main

/*
#define HCCL_COMM_AS_HANDLE
#define HCCL_NO_PROTOTYPES
#include "hccl.h"
*/
import "C"

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// Graph mode (hccl.h): graphs and the execs compiled from them cross the
// boundary as handles, as communicators do. Each remembers its
// communicator's handle, looked up at every call, so that a destroyed
// communicator is hcclClosed rather than a call on a closed Go object,
// and its rank, which names the failures of a graph whose communicator
// is gone.

var (
	graphs = table[graph]{kind: "graph", maker: "hcclGraphCreate"}
	execs  = table[graphExec]{kind: "exec", maker: "hcclGraphCompile"}
)

// graph is one recorded graph; mu serialises its calls, as hccl.Graph is
// not safe for concurrent use. g is nil once destroyed.
type graph struct {
	mu   sync.Mutex
	g    *hccl.Graph
	comm C.hcclComm_t
	rank int
}

// recorded hands err, a recording call's failure, to the Graph
// (hccl.Graph.Fail), whose Compile returns it and fails the other
// ranks' too: the failures found here (a NULL buffer, a bad dtype) never
// reach the Graph otherwise, and a graph compiled without the calls
// that failed would replay a step that is not the caller's.
func (g *graph) recorded(err error) error {
	if err != nil {
		g.g.Fail(err)
	}
	return err
}

// graphExec is one compiled graph; e is nil once destroyed.
type graphExec struct {
	mu   sync.Mutex
	e    *hccl.Executable
	comm C.hcclComm_t
	rank int
}

var errGraphDestroyed = fmt.Errorf("%w: destroyed by another thread", hccl.ErrClosed)

// runGraph is run for the calls on a graph: f runs with the graph locked
// and its communicator live.
func runGraph(h C.hcclGraph_t, op string, f func(c *comm, g *graph) error) (res C.hcclResult_t) {
	var c *comm
	defer recoverInto(&res, &c, op)
	g, err := graphs.get(uint64(h))
	if err != nil {
		return failed(nil, named(op, -1, err))
	}
	if c, err = lookup(g.comm); err != nil {
		return failed(nil, named(op, g.rank, err))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.g == nil {
		return failed(c, named(op, g.rank, errGraphDestroyed))
	}
	return failed(c, named(op, g.rank, f(c, g)))
}

// runExec is runGraph for the calls on an exec.
func runExec(h C.hcclGraphExec_t, op string, f func(c *comm, e *hccl.Executable) error) (res C.hcclResult_t) {
	var c *comm
	defer recoverInto(&res, &c, op)
	e, err := execs.get(uint64(h))
	if err != nil {
		return failed(nil, named(op, -1, err))
	}
	if c, err = lookup(e.comm); err != nil {
		return failed(nil, named(op, e.rank, err))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.e == nil {
		return failed(c, named(op, e.rank, errGraphDestroyed))
	}
	return failed(c, named(op, e.rank, f(c, e.e)))
}

// record is runGraph for the recording calls: it looks up dt and count
// as the collectives do (perRank: a buffer holds count elements for each
// rank). The runtime names its own argument errors after the recording
// call ("GraphAllReduce").
func record(h C.hcclGraph_t, op string, dt C.hcclDataType_t, count C.size_t, perRank bool,
	f func(t *graphType, g *hccl.Graph, c *hccl.Comm, n int) error) C.hcclResult_t {
	return runGraph(h, op, func(c *comm, g *graph) error {
		times := 1
		if perRank {
			times = c.Size()
		}
		t, n, err := c.typed(op, dt, count, times)
		if err != nil {
			return g.recorded(err)
		}
		return g.recorded(f(t.graph, g.g, c.Comm, n))
	})
}

//export hcclGraphCreate
func hcclGraphCreate(h C.hcclComm_t, out *C.hcclGraph_t) C.hcclResult_t {
	return run(h, "GraphCreate", func(c *comm) error {
		if out == nil {
			return invalidArg(c.Comm, "GraphCreate", "graph is NULL")
		}
		*out = C.hcclGraph_t(graphs.add(&graph{g: hccl.NewGraph(c.Comm), comm: h, rank: c.Rank()}))
		return nil
	})
}

//export hcclGraphSetFuseBytes
func hcclGraphSetFuseBytes(h C.hcclGraph_t, bytes C.int64_t) C.hcclResult_t {
	return runGraph(h, "GraphSetFuseBytes", func(c *comm, g *graph) error {
		if int64(bytes) > math.MaxInt || int64(bytes) < math.MinInt {
			return invalidArg(c.Comm, "GraphSetFuseBytes", "%d bytes overflows an int", int64(bytes))
		}
		g.g.FuseBytes = int(bytes)
		return nil
	})
}

//export hcclGraphAllReduce
func hcclGraphAllReduce(send, recv unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, op C.hcclRedOp_t, h C.hcclGraph_t) C.hcclResult_t {
	return record(h, "GraphAllReduce", dt, count, false, func(t *graphType, g *hccl.Graph, c *hccl.Comm, n int) error {
		return t.allReduce(g, c, send, recv, n, hccl.ReduceOp(op))
	})
}

//export hcclGraphBroadcast
func hcclGraphBroadcast(send, recv unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, root C.int, h C.hcclGraph_t) C.hcclResult_t {
	return record(h, "GraphBroadcast", dt, count, false, func(t *graphType, g *hccl.Graph, c *hccl.Comm, n int) error {
		return t.broadcast(g, c, send, recv, n, int(root))
	})
}

//export hcclGraphReduce
func hcclGraphReduce(send, recv unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, op C.hcclRedOp_t, root C.int, h C.hcclGraph_t) C.hcclResult_t {
	return record(h, "GraphReduce", dt, count, false, func(t *graphType, g *hccl.Graph, c *hccl.Comm, n int) error {
		return t.reduce(g, c, send, recv, n, hccl.ReduceOp(op), int(root))
	})
}

//export hcclGraphAllGather
func hcclGraphAllGather(send, recv unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, h C.hcclGraph_t) C.hcclResult_t {
	return record(h, "GraphAllGather", dt, count, true, func(t *graphType, g *hccl.Graph, c *hccl.Comm, n int) error {
		return t.allGather(g, c, send, recv, n)
	})
}

//export hcclGraphReduceScatter
func hcclGraphReduceScatter(send, recv unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, op C.hcclRedOp_t, h C.hcclGraph_t) C.hcclResult_t {
	return record(h, "GraphReduceScatter", dt, count, true, func(t *graphType, g *hccl.Graph, c *hccl.Comm, n int) error {
		return t.reduceScatter(g, c, send, recv, n, hccl.ReduceOp(op))
	})
}

//export hcclGraphAlltoAll
func hcclGraphAlltoAll(send, recv unsafe.Pointer, count C.size_t, dt C.hcclDataType_t, h C.hcclGraph_t) C.hcclResult_t {
	return record(h, "GraphAlltoAll", dt, count, true, func(t *graphType, g *hccl.Graph, c *hccl.Comm, n int) error {
		return t.alltoAll(g, c, send, recv, n)
	})
}

//export hcclGraphAlltoAllV
func hcclGraphAlltoAllV(send unsafe.Pointer, sendCounts, sdispls *C.size_t, recv unsafe.Pointer,
	recvCounts, rdispls *C.size_t, dt C.hcclDataType_t, h C.hcclGraph_t) C.hcclResult_t {
	return runGraph(h, "GraphAlltoAllV", func(c *comm, g *graph) error {
		t, err := typeOf(c, "GraphAlltoAllV", dt)
		if err != nil {
			return g.recorded(err)
		}
		// Copied: C's arrays need not outlive the call, and the
		// runtime reads its own at each replay.
		v, err := c.vcounts("GraphAlltoAllV", t, sendCounts, sdispls, recvCounts, rdispls)
		if err != nil {
			return g.recorded(err)
		}
		return g.recorded(t.graph.alltoAllV(g.g, c.Comm, send, v[0], v[1], recv, v[2], v[3]))
	})
}

//export hcclGraphBarrier
func hcclGraphBarrier(h C.hcclGraph_t) C.hcclResult_t {
	return runGraph(h, "GraphBarrier", func(c *comm, g *graph) error { return g.recorded(g.g.Barrier()) })
}

//export hcclGraphCompile
func hcclGraphCompile(h C.hcclGraph_t, out *C.hcclGraphExec_t) C.hcclResult_t {
	return runGraph(h, "GraphCompile", func(c *comm, g *graph) error {
		if out == nil {
			return invalidArg(c.Comm, "GraphCompile", "exec is NULL")
		}
		*out = 0
		e, err := g.g.Compile(background)
		if err != nil {
			return err
		}
		*out = C.hcclGraphExec_t(execs.add(&graphExec{e: e, comm: g.comm, rank: g.rank}))
		return nil
	})
}

//export hcclGraphLaunch
func hcclGraphLaunch(h C.hcclGraphExec_t) C.hcclResult_t {
	return runExec(h, "GraphLaunch", func(c *comm, e *hccl.Executable) error { return e.Run(background) })
}

//export hcclGraphExecSteps
func hcclGraphExecSteps(h C.hcclGraphExec_t, steps *C.int) C.hcclResult_t {
	return runExec(h, "GraphExecSteps", func(c *comm, e *hccl.Executable) error {
		if steps == nil {
			return invalidArg(c.Comm, "GraphExecSteps", "steps is NULL")
		}
		*steps = C.int(e.Steps())
		return nil
	})
}

// The destroys need no live communicator: a program may destroy it first.

//export hcclGraphExecDestroy
func hcclGraphExecDestroy(h C.hcclGraphExec_t) (res C.hcclResult_t) {
	const op = "GraphExecDestroy"
	var c *comm
	defer recoverInto(&res, &c, op)
	e, err := execs.remove(uint64(h))
	if err != nil {
		return failed(nil, named(op, -1, err))
	}
	c, _ = lookup(e.comm)
	e.mu.Lock() // after a launch running on another thread
	defer e.mu.Unlock()
	x := e.e
	e.e = nil
	return failed(c, named(op, e.rank, x.Close()))
}

//export hcclGraphDestroy
func hcclGraphDestroy(h C.hcclGraph_t) (res C.hcclResult_t) {
	const op = "GraphDestroy"
	var c *comm
	defer recoverInto(&res, &c, op)
	g, err := graphs.remove(uint64(h))
	if err != nil {
		return failed(nil, named(op, -1, err))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.g = nil
	return C.hcclSuccess
}
