package reduce

import "fmt"

// Op names a reduction operator.
type Op uint8

// The operators. The numbers travel in frame headers (wire.Call.Op, where 0
// means "no reduction"): never renumber them, only append.
const (
	Sum Op = iota + 1
	Prod
	Max
	Min
	Avg // reduces as Sum; the caller calls Divide once at the end
)

// numOps bounds the dispatch tables; index 0 is the invalid zero value.
const numOps = int(Avg) + 1

var opNames = [numOps]string{Sum: "sum", Prod: "prod", Max: "max", Min: "min", Avg: "avg"}

// Valid reports whether o is one of the declared operators.
func (o Op) Valid() bool { return o >= Sum && o <= Avg }

func (o Op) String() string {
	if !o.Valid() {
		return fmt.Sprintf("op(%d)", uint8(o))
	}
	return opNames[o]
}
