//go:build !amd64 || noasm || !gc

package cpu

import "sync/atomic"

// ReleaseStore64 stores v into w (sync/atomic's store: release.go).
func ReleaseStore64(w *atomic.Uint64, v uint64) { w.Store(v) }
