//go:build !amd64 || noasm || !gc

package release

import "sync/atomic"

// Store32 stores v into w (sequentially consistent: release.go).
func Store32(w *atomic.Uint32, v uint32) { w.Store(v) }

// Store64 stores v into w (sequentially consistent: release.go).
func Store64(w *atomic.Uint64, v uint64) { w.Store(v) }
