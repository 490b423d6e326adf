package runtime

import (
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/reduce"
)

// ReduceOp is the reduction of AllReduce, Reduce and ReduceScatter.
type ReduceOp int

const (
	Sum  ReduceOp = iota // elementwise sum; integers wrap
	Prod                 // elementwise product; integers wrap
	Max                  // elementwise maximum
	Min                  // elementwise minimum
	Avg                  // sum divided by Size(); floating types only
)

func (op ReduceOp) String() string {
	if k, ok := op.kernelOp(); ok {
		return k.String()
	}
	return fmt.Sprintf("ReduceOp(%d)", int(op))
}

func (op ReduceOp) kernelOp() (reduce.Op, bool) {
	switch op {
	case Sum:
		return reduce.Sum, true
	case Prod:
		return reduce.Prod, true
	case Max:
		return reduce.Max, true
	case Min:
		return reduce.Min, true
	case Avg:
		return reduce.Avg, true
	}
	return 0, false
}
