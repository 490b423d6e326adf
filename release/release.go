// Package release stores a word with release semantics only: what the
// storing goroutine wrote before is visible to whoever loads the new value,
// and nothing more is promised. sync/atomic's stores are sequentially
// consistent, which on x86 means XCHG: a locked instruction that waits for
// every store still in flight to reach the cache, a pipeline stall of
// several nanoseconds on every store. Where no load after the store
// depends on the store being seen first (no Dekker-style handshake: a
// counter only ever read, a progress word), the plain MOV that x86's
// store order already makes a release is enough.
//
// The words are the sync/atomic types, so that readers keep loading them
// with Load. Without assembly (other architectures, or -tags noasm) the
// stores are sync/atomic's.
package release
