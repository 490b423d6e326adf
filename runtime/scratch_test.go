package runtime_test

import (
	"testing"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestPATUnderScratchLimit: the runtime bounds PAT's scratch by the
// buffer (HCCL_BUFFSIZE, here 4 KiB), so PAT cuts its blocks into pieces,
// at one rank per server where the selector picks it, and every
// AllGather and ReduceScatter still comes out exact, forced or chosen.
func TestPATUnderScratchLimit(t *testing.T) {
	types := []typeCheck{matrixTypes[4], matrixTypes[11]} // int32, float64: 1024 and 512 elements of scratch
	for _, spec := range []string{"allgather:pat;reducescatter:pat", ""} {
		t.Run("algo="+spec, func(t *testing.T) {
			j := newJobPerServer(t, 5, 1, hccl.WithBufferSize(4096), hccl.WithAlgo(spec))
			j.t = t
			runMatrixOn(t, j, types, []int{0, 1, 7, 1000, 5000})
		})
	}
}
