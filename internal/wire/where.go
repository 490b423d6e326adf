package wire

// Where is where a rank is inside a collective, in one word that the
// executor stores with a plain release store and the control plane's
// heartbeats carry to the launcher (hcclrun status): the call's
// collective, the plan step it runs and the peer its op waits on.
// The zero Where says nothing.
//
// Bits 0-31 hold the peer plus one (0: no peer), bits 32-47 the step,
// bits 48-55 the collective plus one (0: unknown); the rest are zero.
type Where uint64

// MakeWhere packs a collective, a step and a peer; steps beyond 16 bits
// saturate, and a negative peer means none.
func MakeWhere(coll uint8, step, peer int) Where {
	w := Where(uint64(coll)+1) << 48
	w |= Where(uint64(min(max(step, 0), 0xffff))) << 32
	if peer >= 0 {
		w |= Where(uint32(peer + 1))
	}
	return w
}

// Coll returns the collective, and false for the zero Where.
func (w Where) Coll() (uint8, bool) {
	c := uint8(w >> 48)
	return c - 1, c != 0
}

// Step returns the plan step.
func (w Where) Step() int { return int(uint16(w >> 32)) }

// Peer returns the peer waited on, or -1.
func (w Where) Peer() int { return int(uint32(w)) - 1 }
