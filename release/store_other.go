//go:build !amd64 || noasm || !gc

package release

import "sync/atomic"

// Store64 stores v into w (sequentially consistent: release.go).
func Store64(w *atomic.Uint64, v uint64) { w.Store(v) }
