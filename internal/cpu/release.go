package cpu

// ReleaseStore64 (release_amd64.go) stores a word with release semantics
// only: what the storing goroutine wrote before is visible to whoever
// loads the new value, and nothing more is promised. sync/atomic's stores
// are sequentially consistent, which on x86 means XCHG, a locked
// instruction that stalls until every store in flight reaches the cache.
// Where no load after the store depends on the store being seen first (no
// Dekker-style handshake: a counter only ever read, a progress word), the
// plain MOV that x86's store order already makes a release is enough.
// Readers keep loading the word with sync/atomic's Load.
