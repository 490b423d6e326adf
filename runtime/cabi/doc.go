//go:build cgo

// Command cabi is libhccl.so, the runtime's C interface (hccl.h), built
// with
//
//	go build -buildmode=c-shared -o libhccl.so ./runtime/cabi
//
// (make lib does it, and installs hccl.h and a pkg-config file beside it).
// It is a thin layer over package runtime: each exported function checks
// what C can get wrong and Go cannot (NULL pointers, handles, enum values,
// counts that overflow), makes Go slices over the caller's memory without
// copying it, and calls the Go collective of the element type.
//
// Communicators cross the boundary as integer handles into a table
// (comms.go), never as Go pointers, so that a destroyed or made-up handle
// is an error rather than a crash, and no Go memory is held by C. Every
// failure is turned into a result code of its own kind (results.go) and
// its whole message kept for hcclCommGetLastError; a panic is recovered
// into hcclInternalError, so that none crosses into the caller.
//
// Every call comes from a C thread, to which cgo locks the goroutine that
// runs it; the library therefore turns off the waiters' yields to the Go
// scheduler (cpu.SetGoroutineYield), each of which would hand that thread
// over and back (docs/performance.md#the-c-interface).
//
// Graph mode (graphs.go) goes through the same table: a graph and the
// exec hcclGraphCompile makes of it are handles too, numbered with the
// communicators so that none passes for another kind, each remembering
// its communicator's handle, looked up at every call, and rank. The
// recording calls make the slices as the collectives do and hand them to
// the runtime's Graph* functions, which keep them: the C memory must stay
// valid until the graph and its execs are destroyed, which hccl.h asks of
// the caller. Broadcast is recorded in place only, since the out-of-place
// form's copy on the root would have to run inside the replay.
//
// The Python package python/hccl loads this library through ctypes.
//
// Every file needs cgo (go:build cgo where it does not import "C"), so
// that a build without it, such as a cross-compilation, leaves the
// package out rather than failing on half of it.
package main

import "github.com/hcclrun/hcclrun/internal/cpu"

func init() { cpu.SetGoroutineYield(false) }

// main is required of a c-shared build and never runs.
func main() {}
