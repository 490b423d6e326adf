package bench

import (
	"fmt"
	"math/rand/v2"
	"testing"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// The exact-result checker, without the runtime: every rank's case of an
// n-rank job is built in this process, the collective is carried out by a
// reference (reducing in the element type itself, one rounding per step, in
// a random rank order, so the patterns' exactness claim is tested too), and
// check must find nothing wrong; then one corrupted element must be found,
// and so must a rank whose output was never written.

func TestCheckerExact(t *testing.T) {
	t.Run("float", func(t *testing.T) { checkerSuite[float32](t, "float") })
	t.Run("half", func(t *testing.T) { checkerSuite[hccl.Float16](t, "half") })
	t.Run("bfloat16", func(t *testing.T) { checkerSuite[hccl.BFloat16](t, "bfloat16") })
	t.Run("int8", func(t *testing.T) { checkerSuite[int8](t, "int8") })
	t.Run("uint16", func(t *testing.T) { checkerSuite[uint16](t, "uint16") })
	t.Run("double", func(t *testing.T) { checkerSuite[float64](t, "double") })
}

func checkerSuite[T hccl.Element](t *testing.T, dtype string) {
	d, err := ParseDType(dtype)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 5, 8} {
		for c := range numColls {
			for _, opName := range []string{"sum", "prod", "max", "min", "avg"} {
				if opName != "sum" && !c.Reduces() || opName == "avg" && !d.floating() {
					continue
				}
				op, _ := ParseRedOp(opName)
				for _, inPlace := range []bool{false, true} {
					if inPlace && !c.HasInPlace() {
						continue
					}
					// 1000 bytes: counts not divisible by most n.
					l := NewLayout(c, 1000, d.Size, n)
					name := fmt.Sprintf("%v/n=%d/%s/inplace=%v", c, n, opName, inPlace)
					root := n - 1
					cases := make([]*benchCase[T], n)
					for r := range n {
						size := max(l.SendCount, l.RecvCount)
						cases[r] = newCase(n, r, l, inPlace, d, op, root, make([]T, size), make([]T, size))
						cases[r].fill()
					}
					simulate(cases, opName, rng)
					var total int64
					for _, cs := range cases {
						total += cs.check()
					}
					if total != 0 {
						t.Errorf("%s: %d wrong elements after a correct collective", name, total)
						continue
					}
					// Corrupt one result element of the last rank that has one.
					victim := -1
					for r := n - 1; r >= 0; r-- {
						if len(cases[r].recv) > 0 {
							victim = r
							break
						}
					}
					if victim < 0 {
						continue // nothing to check (Reduce result on the root only, empty)
					}
					out := cases[victim].recv
					i := rng.IntN(len(out))
					out[i] = fromF64[T](toF64(out[i]) - 1) // results are >= 1: exact, and different
					if len(out) > 1 {                      // and leave one element unwritten
						j := (i + 1) % len(out)
						out[j] = 0
					}
					want := int64(min(len(out), 2))
					total = 0
					for _, cs := range cases {
						total += cs.check()
					}
					if total != want {
						t.Errorf("%s: %d wrong elements after corrupting %d of rank %d", name, total, want, victim)
					}
				}
			}
		}
	}
}

// simulate carries out the collective of cases (one per rank, filled) by
// moving and reducing their data.
func simulate[T hccl.Element](cases []*benchCase[T], op string, rng *rand.Rand) {
	n := len(cases)
	c0 := cases[0]
	ins := make([][]T, n)
	for r, c := range cases {
		src := c.send
		if c.coll == Broadcast {
			src = c.recv
		}
		ins[r] = append([]T(nil), src...)
	}
	reduceAt := func(idx int) T {
		order := rng.Perm(n)
		acc := toF64(ins[order[0]][idx])
		for _, r := range order[1:] {
			v := toF64(ins[r][idx])
			switch op {
			case "prod":
				acc = roundTo[T](acc * v)
			case "max":
				acc = max(acc, v)
			case "min":
				acc = min(acc, v)
			default:
				acc = roundTo[T](acc + v)
			}
		}
		if op == "avg" {
			acc /= float64(n)
		}
		return fromF64[T](acc)
	}
	switch c0.coll {
	case AllReduce:
		for _, c := range cases {
			for i := range c.recv {
				c.recv[i] = reduceAt(i)
			}
		}
	case Reduce:
		c := cases[c0.root]
		for i := range c.recv {
			c.recv[i] = reduceAt(i)
		}
	case AllGather:
		k := len(ins[0])
		for _, c := range cases {
			for s := range n {
				copy(c.recv[s*k:], ins[s])
			}
		}
	case ReduceScatter:
		for r, c := range cases {
			k := len(c.recv)
			for i := range c.recv {
				c.recv[i] = reduceAt(r*k + i)
			}
		}
	case AlltoAll:
		k := len(ins[0]) / n
		for r, c := range cases {
			for s := range n {
				copy(c.recv[s*k:(s+1)*k], ins[s][r*k:(r+1)*k])
			}
		}
	case AlltoAllV:
		for r, c := range cases {
			for s := range n {
				src := cases[s]
				copy(c.recv[c.rd[s]:c.rd[s]+c.rc[s]], ins[s][src.sd[r]:src.sd[r]+src.sc[r]])
			}
		}
	case Broadcast:
		for _, c := range cases {
			copy(c.recv, ins[c0.root])
		}
	}
}

func toF64[T hccl.Element](v T) float64 {
	switch x := any(v).(type) {
	case hccl.Float16:
		return float64(x.Float32())
	case hccl.BFloat16:
		return float64(x.Float32())
	}
	return float64(v)
}

func fromF64[T hccl.Element](f float64) T {
	var zero T
	switch any(zero).(type) {
	case hccl.Float16:
		return T(hccl.Float16From(float32(f)))
	case hccl.BFloat16:
		return T(hccl.BFloat16From(float32(f)))
	}
	return T(f)
}

// roundTo rounds f to T, as one arithmetic step in T would.
func roundTo[T hccl.Element](f float64) float64 { return toF64(fromF64[T](f)) }
