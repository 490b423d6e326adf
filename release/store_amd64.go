//go:build !noasm && gc

package release

import "sync/atomic"

// Store64 stores v into w with release semantics (store_amd64.s).
//
//go:noescape
func Store64(w *atomic.Uint64, v uint64)
