package selector

import (
	"testing"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// BenchmarkPrice is what a call of a size the selector has not seen yet
// costs it: the model run over every algorithm, channel count and
// segment size.
func BenchmarkPrice(b *testing.B) {
	for _, c := range []struct {
		name  string
		coll  plan.Coll
		bytes int64
		ranks int
	}{{"allreduce-8B-np2", plan.AllReduce, 8, 2}, {"allreduce-1MiB-np4", plan.AllReduce, 1 << 20, 4}, {"allgather-1MiB-np8", plan.AllGather, 1 << 20, 8}} {
		b.Run(c.name, func(b *testing.B) {
			s := New(DefaultModel(), Policy{}, nil)
			call := Call{Coll: c.coll, Bytes: c.bytes, Topo: Topo{Ranks: c.ranks, Servers: 1}}
			for b.Loop() {
				if _, err := s.Price(call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
