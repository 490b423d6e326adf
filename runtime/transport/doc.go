// Package transport defines what the executor moves frames over: the Link
// between two ranks, and two optional abilities of a link (PayloadVisitor:
// show a payload in place so a receiver reduces straight from the link's
// buffer; TrySender: send a frame only if that needs no waiting).
//
// Implementations live in sub-packages, one per medium: shmlink (two
// shared-memory rings, for ranks of one host) and tcplink (one
// authenticated TCP connection). linktest is the conformance suite every
// implementation passes.
//
// Which medium serves a pair of ranks is decided where links are opened,
// in package runtime (links.go), as NCCL orders its transports: shared
// memory when the two ranks' topology facts say they share a host and
// HCCL_SHM_DISABLE is not set, else TCP; a shared-memory set-up that fails
// falls back to TCP with a warning. Of two ranks the higher one dials and
// the lower one accepts, so both agree on one link without talking first.
package transport
