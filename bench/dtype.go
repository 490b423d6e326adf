package bench

import (
	"fmt"
	"strings"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// DType is an element type of the benchmark, named as nccl-tests names it.
type DType struct {
	Name string // nccl-tests' name: float, half, bfloat16, int32, ...
	Size int    // bytes per element
	// Exact is the largest integer such that every integer in [0, Exact]
	// is representable and no sum up to it overflows: the bound the input
	// patterns keep their results under, so that they are exact in any
	// reduction order.
	Exact int64
}

var dtypes = []DType{
	{"int8", 1, 1<<7 - 1},
	{"uint8", 1, 1<<8 - 1},
	{"int16", 2, 1<<15 - 1},
	{"uint16", 2, 1<<16 - 1},
	{"int32", 4, 1<<31 - 1},
	{"uint32", 4, 1<<32 - 1},
	{"int64", 8, 1<<63 - 1},
	{"uint64", 8, 1<<63 - 1},
	{"half", 2, 1 << 11},    // 11-bit significand
	{"bfloat16", 2, 1 << 8}, // 8-bit significand
	{"float", 4, 1 << 24},   // 24-bit significand
	{"double", 8, 1 << 53},  // 53-bit significand
}

var dtypeAliases = map[string]string{
	"float16": "half", "fp16": "half", "bf16": "bfloat16",
	"float32": "float", "fp32": "float", "float64": "double", "fp64": "double",
	"int": "int32", "uint": "uint32", "char": "int8",
}

// ParseDType reads the -d value (nccl-tests' names, plus Go-style aliases
// such as float32 and float16).
func ParseDType(s string) (DType, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if a, ok := dtypeAliases[name]; ok {
		name = a
	}
	for _, d := range dtypes {
		if d.Name == name {
			return d, nil
		}
	}
	names := make([]string, len(dtypes))
	for i, d := range dtypes {
		names[i] = d.Name
	}
	return DType{}, fmt.Errorf("unknown data type %q (want one of %s)", s, strings.Join(names, ", "))
}

// RedOp is the reduction of AllReduce, ReduceScatter and Reduce.
type RedOp struct {
	Name string // sum, prod, max, min, avg
	op   hccl.ReduceOp
}

var redOps = []RedOp{{"sum", hccl.Sum}, {"prod", hccl.Prod}, {"max", hccl.Max}, {"min", hccl.Min}, {"avg", hccl.Avg}}

// ParseRedOp reads the --redop value.
func ParseRedOp(s string) (RedOp, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for _, r := range redOps {
		if r.Name == name {
			return r, nil
		}
	}
	return RedOp{}, fmt.Errorf("unknown reduction %q (want sum, prod, max, min or avg)", s)
}

// floating reports whether d is a floating-point type (Avg needs one).
func (d DType) floating() bool {
	switch d.Name {
	case "half", "bfloat16", "float", "double":
		return true
	}
	return false
}
