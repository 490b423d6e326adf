//go:build !noasm && gc

package cpu

import "sync/atomic"

// ReleaseStore64 stores v into w with release semantics (store_amd64.s).
//
//go:noescape
func ReleaseStore64(w *atomic.Uint64, v uint64)
