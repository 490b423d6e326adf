package plan

import (
	"fmt"
	"strings"
)

// Coll names a collective operation.
type Coll uint8

// The collectives. The numbers travel in frame headers (wire.Call.Coll):
// never renumber them.
const (
	AllReduce Coll = iota + 1
	Broadcast
	Reduce
	AllGather
	ReduceScatter
	AlltoAll
	AlltoAllV
	Barrier
	SendRecv
)

var collNames = [...]string{
	AllReduce:     "AllReduce",
	Broadcast:     "Broadcast",
	Reduce:        "Reduce",
	AllGather:     "AllGather",
	ReduceScatter: "ReduceScatter",
	AlltoAll:      "AlltoAll",
	AlltoAllV:     "AlltoAllV",
	Barrier:       "Barrier",
	SendRecv:      "SendRecv",
}

func (c Coll) String() string {
	if int(c) < len(collNames) && collNames[c] != "" {
		return collNames[c]
	}
	return fmt.Sprintf("Coll(%d)", c)
}

// Buf names one of the buffers a plan works on.
type Buf uint8

const (
	BufNone    Buf = iota // no buffer (the region is unused)
	BufSend               // the caller's send buffer
	BufRecv               // the caller's receive buffer
	BufScratch            // scratch owned by the communicator, Plan.ScratchLen elements
)

func (b Buf) String() string {
	switch b {
	case BufNone:
		return "-"
	case BufSend:
		return "send"
	case BufRecv:
		return "recv"
	case BufScratch:
		return "scratch"
	}
	return fmt.Sprintf("Buf(%d)", b)
}

// Region is a contiguous range of elements of one buffer. Offsets and lengths
// are in elements, so one plan serves every element type.
type Region struct {
	Buf Buf
	Off int // first element
	Len int // number of elements
}

func (r Region) String() string {
	if r.Buf == BufNone {
		return "-"
	}
	return fmt.Sprintf("%s[%d:%d]", r.Buf, r.Off, r.Off+r.Len)
}

// Kind is what one Op does.
type Kind uint8

const (
	// OpSend transmits Src to Peer.
	OpSend Kind = iota + 1
	// OpRecv receives from Peer into Dst.
	OpRecv
	// OpRecvReduce receives Dst.Len elements from Peer and stores
	// Src op incoming into Dst (incoming op Src with Op.PeerFirst).
	// Src and Dst may be the same region (accumulate in place); they
	// have the same length.
	OpRecvReduce
	// OpCopy stores Src into Dst locally.
	OpCopy
	// OpReduce stores Dst op Src into Dst locally.
	OpReduce
)

func (k Kind) String() string {
	switch k {
	case OpSend:
		return "Send"
	case OpRecv:
		return "Recv"
	case OpRecvReduce:
		return "RecvReduce"
	case OpCopy:
		return "Copy"
	case OpReduce:
		return "Reduce"
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Op is one action of a step. Peer is meaningful for OpSend, OpRecv and
// OpRecvReduce only.
type Op struct {
	Kind Kind
	Peer int
	Src  Region
	Dst  Region
	// PeerFirst makes an OpRecvReduce store incoming op Src: the order
	// a plan needs where the peer's input comes first in the reduction
	// every rank must perform alike (floating-point reductions are not
	// associative, and Max and Min not commutative with NaNs).
	PeerFirst bool
}

func (o Op) String() string {
	switch o.Kind {
	case OpSend:
		return fmt.Sprintf("Send %s -> %d", o.Src, o.Peer)
	case OpRecv:
		return fmt.Sprintf("Recv %d -> %s", o.Peer, o.Dst)
	case OpRecvReduce:
		if o.PeerFirst {
			return fmt.Sprintf("RecvReduce %d (+) %s -> %s, the peer's first", o.Peer, o.Src, o.Dst)
		}
		return fmt.Sprintf("RecvReduce %d (+) %s -> %s", o.Peer, o.Src, o.Dst)
	case OpCopy:
		return fmt.Sprintf("Copy %s -> %s", o.Src, o.Dst)
	case OpReduce:
		return fmt.Sprintf("Reduce %s (+)= %s", o.Dst, o.Src)
	}
	return o.Kind.String()
}

// Step is a set of ops that run concurrently. A rank starts a step when its
// previous step has finished. Within one step:
//   - at most one OpSend per peer and at most one OpRecv or OpRecvReduce per peer;
//   - no op writes a region that another op of the step reads or writes.
//
// Transfers between two ranks are matched in order: the k-th OpSend from A
// to B in A's plan pairs with the k-th OpRecv/OpRecvReduce from A in B's
// plan, and both have the same length.
type Step struct {
	Ops []Op
}

// Plan is one rank's part of one collective: what the rank does, in order.
// Plans are pure data built by the algorithms; the executor runs them.
type Plan struct {
	Coll       Coll
	Algo       string // algorithm name, e.g. "ring"
	Rank       int
	Size       int
	Steps      []Step
	ScratchLen int // scratch elements the plan needs
}

// String prints the plan one step per line, for debugging and golden files.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s rank %d of %d, scratch %d\n", p.Coll, p.Algo, p.Rank, p.Size, p.ScratchLen)
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "  step %d:", i)
		for j, o := range s.Ops {
			if j > 0 {
				b.WriteString(";")
			}
			b.WriteString(" ")
			b.WriteString(o.String())
		}
		b.WriteString("\n")
	}
	return b.String()
}
