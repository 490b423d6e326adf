package wire

import (
	"encoding/binary"
	"fmt"
)

// Purpose says what a connection is for, so that one listening port can
// serve several kinds of connection and a connection of the wrong kind is
// refused by name rather than misread.
type Purpose byte

// Purposes of hcclrun's connections.
const (
	PurposeControl Purpose = 1 // a rank or agent to the launcher's control server
	PurposeData    Purpose = 2 // a data link between two ranks
	PurposeShm     Purpose = 3 // a unix socket that sets up shared memory between two ranks
	PurposeAgent   Purpose = 4 // a host's agent dialling back to the launcher (Slurm launches)
)

func (p Purpose) String() string {
	switch p {
	case PurposeControl:
		return "control"
	case PurposeData:
		return "data"
	case PurposeShm:
		return "shm"
	case PurposeAgent:
		return "agent"
	}
	return fmt.Sprintf("purpose(%d)", byte(p))
}

// LauncherRank is the Rank a Hello carries for the launcher (and anything
// else that is not a rank).
const LauncherRank = ^uint32(0)

// Hello is one side's identity, sent in the handshake and covered by both
// MACs, so that a peer cannot claim one rank during the proof and another
// afterwards.
type Hello struct {
	Purpose Purpose
	Rank    uint32 // the sender's rank, or LauncherRank
	Tag     uint32 // purpose-specific, e.g. the channel number of a data link
}

func (h Hello) String() string {
	if h.Rank == LauncherRank {
		return fmt.Sprintf("%v from launcher tag %d", h.Purpose, h.Tag)
	}
	return fmt.Sprintf("%v from rank %d tag %d", h.Purpose, h.Rank, h.Tag)
}

// helloSize is the encoded size of a Hello.
const helloSize = 9

func (h Hello) put(b []byte) {
	_ = b[helloSize-1]
	b[0] = byte(h.Purpose)
	binary.LittleEndian.PutUint32(b[1:], h.Rank)
	binary.LittleEndian.PutUint32(b[5:], h.Tag)
}

func (h *Hello) get(b []byte) {
	_ = b[helloSize-1]
	h.Purpose = Purpose(b[0])
	h.Rank = binary.LittleEndian.Uint32(b[1:])
	h.Tag = binary.LittleEndian.Uint32(b[5:])
}
