package executor

import (
	"fmt"
	"strings"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/reduce"
)

// MismatchError reports a frame that is not the one this rank's plan
// expects: the peer is running another call, or the same call with other
// arguments (count, dtype, op, root, per-peer counts).
type MismatchError struct {
	Rank int         // the receiving rank (this one)
	Peer int         // the sending rank
	Want wire.Header // what this rank expected
	Got  wire.Header // what arrived
}

func (e *MismatchError) Error() string {
	if e.SameCall() {
		return fmt.Sprintf("rank %d and rank %d both called %s but disagree on transfer %d: rank %d expected %d bytes at offset %d (transfer %d), rank %d sent %d bytes at offset %d (transfer %d)",
			e.Rank, e.Peer, DescribeCall(e.Want.Seq, e.Want.Call), e.Want.Step,
			e.Rank, e.Want.Len, e.Want.Offset, e.Want.Step, e.Peer, e.Got.Len, e.Got.Offset, e.Got.Step)
	}
	return fmt.Sprintf("rank %d called %s but rank %d called %s",
		e.Rank, DescribeCall(e.Want.Seq, e.Want.Call), e.Peer, DescribeCall(e.Got.Seq, e.Got.Call))
}

// SameCall tells whether both ranks are in the same call with the same
// arguments, so that the mismatch lies in a transfer (its length, offset
// or ordinal): per-peer counts that disagree, for instance.
func (e *MismatchError) SameCall() bool {
	return e.Want.Seq == e.Got.Seq && e.Want.Call == e.Got.Call
}

// DescribeCall formats a call descriptor for error messages, e.g.
// "AllReduce(count=1000, float32, sum) #3".
func DescribeCall(seq uint64, c wire.Call) string {
	var b strings.Builder
	coll := plan.Coll(c.Coll)
	b.WriteString(coll.String())
	b.WriteString("(")
	// AlltoAllV's counts are per peer and Barrier moves nothing: a count
	// would only confuse.
	sep := ""
	if coll != plan.AlltoAllV && coll != plan.Barrier {
		fmt.Fprintf(&b, "count=%d", c.Count)
		sep = ", "
	}
	if c.DType != 0 && coll != plan.Barrier {
		fmt.Fprintf(&b, "%s%s", sep, reduce.DType(c.DType))
		sep = ", "
	}
	if c.Op != 0 {
		fmt.Fprintf(&b, "%s%s", sep, reduce.Op(c.Op))
		sep = ", "
	}
	if c.Root >= 0 {
		fmt.Fprintf(&b, "%sroot=%d", sep, c.Root)
	}
	fmt.Fprintf(&b, ") #%d", seq)
	return b.String()
}

// LinkError reports a failure of the link to a peer while running a step.
type LinkError struct {
	Peer int    // the peer at the other end
	Step int    // index of the step in the plan
	Op   string // the op that failed, as the plan prints it
	Err  error
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("step %d %s: %v", e.Step, e.Op, e.Err)
}

func (e *LinkError) Unwrap() error { return e.Err }
