package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// HeaderSize is the encoded size of a Header in bytes.
const HeaderSize = 48

// frameMagic opens every data frame; a stream that does not start with it is
// not ours (or has lost synchronisation) and is dropped.
const frameMagic uint32 = 0x31464348 // "HCF1" little endian

// Call describes the collective call a frame belongs to, as the sender sees
// it. This package does not interpret the numbers; the runtime gives them meaning
// and compares its own Call with the sender's to detect mismatched calls.
type Call struct {
	Coll  uint8  // collective kind
	DType uint8  // element type
	Op    uint8  // reduction operator (0 when none)
	Root  int32  // root rank, -1 when the collective has none
	Count uint64 // element count that all ranks must agree on
}

// Header precedes every payload on a data link. It carries (sequence,
// collective, step, length) so that a receiver can tell a frame of the call
// it expects from a frame of another call.
type Header struct {
	Seq    uint64 // per-communicator sequence number of the call
	Call   Call   // the call the sender is executing
	Src    uint32 // sending rank
	Step   uint32 // ordinal of the transfer on this directed link within the call
	Offset uint64 // byte offset of this segment within the transfer
	Len    uint32 // payload bytes that follow the header
}

// ErrBadFrame reports bytes that do not decode as a frame header.
var ErrBadFrame = errors.New("wire: bad frame header")

// Encode writes h into b, which must hold at least HeaderSize bytes.
func (h *Header) Encode(b []byte) {
	_ = b[HeaderSize-1]
	binary.LittleEndian.PutUint32(b[0:], frameMagic)
	b[4] = h.Call.Coll
	b[5] = h.Call.DType
	b[6] = h.Call.Op
	b[7] = 0
	binary.LittleEndian.PutUint32(b[8:], uint32(h.Call.Root))
	binary.LittleEndian.PutUint32(b[12:], h.Src)
	binary.LittleEndian.PutUint64(b[16:], h.Seq)
	binary.LittleEndian.PutUint64(b[24:], h.Call.Count)
	binary.LittleEndian.PutUint32(b[32:], h.Step)
	binary.LittleEndian.PutUint32(b[36:], h.Len)
	binary.LittleEndian.PutUint64(b[40:], h.Offset)
}

// Decode parses a header from b. It fails with ErrBadFrame when b is short,
// the magic is wrong or a reserved byte is set.
func (h *Header) Decode(b []byte) error {
	flags, err := h.DecodeFlagged(b)
	if err == nil && flags != 0 {
		return fmt.Errorf("%w: reserved byte %#02x", ErrBadFrame, flags)
	}
	return err
}

// EncodeFlagged is Encode with the link's flags in the header's reserved
// byte: a link may mark the frames it carries (shmlink marks a payload it
// left in the sender's memory). Only DecodeFlagged accepts such a header.
func (h *Header) EncodeFlagged(b []byte, flags uint8) {
	h.Encode(b)
	b[7] = flags
}

// DecodeFlagged is Decode for a link that marks its frames: it returns the
// reserved byte instead of rejecting it.
func (h *Header) DecodeFlagged(b []byte) (flags uint8, err error) {
	if len(b) < HeaderSize {
		return 0, fmt.Errorf("%w: %d bytes, want %d", ErrBadFrame, len(b), HeaderSize)
	}
	if m := binary.LittleEndian.Uint32(b[0:]); m != frameMagic {
		return 0, fmt.Errorf("%w: magic %#08x", ErrBadFrame, m)
	}
	h.Call.Coll = b[4]
	h.Call.DType = b[5]
	h.Call.Op = b[6]
	h.Call.Root = int32(binary.LittleEndian.Uint32(b[8:]))
	h.Src = binary.LittleEndian.Uint32(b[12:])
	h.Seq = binary.LittleEndian.Uint64(b[16:])
	h.Call.Count = binary.LittleEndian.Uint64(b[24:])
	h.Step = binary.LittleEndian.Uint32(b[32:])
	h.Len = binary.LittleEndian.Uint32(b[36:])
	h.Offset = binary.LittleEndian.Uint64(b[40:])
	return b[7], nil
}
