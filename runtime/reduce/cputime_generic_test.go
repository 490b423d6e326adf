//go:build !linux

package reduce

import "time"

// threadCPU is not measured off Linux; the benchmarks then report wall
// time only.
func threadCPU() time.Duration { return 0 }
