package shmlink

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"time"

	"github.com/hcclrun/hcclrun/shm"
)

// DefaultRingBytes is the data capacity of each direction of a link when
// DialConfig.RingBytes is zero. See the package documentation for why.
const DefaultRingBytes = 4 << 20

// maxRingBytes bounds a ring: a larger one buys no bandwidth and would make
// a typo in HCCL_BUFFSIZE eat the host's memory.
const maxRingBytes = 1 << 30

// setupTimeout bounds the set-up of a link whose context has no earlier
// deadline: two handshake round trips and one descriptor, well under a
// millisecond when the peer is alive.
const setupTimeout = 10 * time.Second

// segMsg is the message that carries the segment descriptor: a magic, the
// ring capacity, the channel number, whether large payloads may go over
// in place (direct.go), whether the descriptors of the link's pipes
// come with the segment's (splice.go) and whether the segment's pages
// fault in at first touch rather than being read ahead (shm.Options.Lazy:
// both sides do as the dialer chose). The listener cross-checks the
// capacity against what the rings in the segment say.
const (
	segMagic   = "HSM4"
	segMsgSize = 4 + 8 + 4 + 1 + 1 + 1
	segAck     = 'k'
)

type segMsg struct {
	capacity            int
	tag                 uint32
	direct, pipes, lazy bool
}

func (m segMsg) encode() []byte {
	b := make([]byte, segMsgSize)
	copy(b, segMagic)
	binary.LittleEndian.PutUint64(b[4:], uint64(m.capacity))
	binary.LittleEndian.PutUint32(b[12:], m.tag)
	if m.direct {
		b[16] = 1
	}
	if m.pipes {
		b[17] = 1
	}
	if m.lazy {
		b[18] = 1
	}
	return b
}

func decodeSegMsg(b []byte) (segMsg, error) {
	if len(b) != segMsgSize || string(b[:4]) != segMagic || b[16] > 1 || b[17] > b[16] || b[18] > 1 {
		return segMsg{}, fmt.Errorf("bad segment message %q", b)
	}
	return segMsg{
		capacity: int(binary.LittleEndian.Uint64(b[4:])),
		tag:      binary.LittleEndian.Uint32(b[12:]),
		direct:   b[16] == 1,
		pipes:    b[17] == 1,
		lazy:     b[18] == 1,
	}, nil
}

// RingCapacity returns the capacity Dial uses for a requested RingBytes:
// DefaultRingBytes for 0, otherwise n rounded up to a power of two (rings
// index with a mask).
func RingCapacity(n int) (int, error) {
	if n == 0 {
		return DefaultRingBytes, nil
	}
	if n < shm.MinRingCapacity || n > maxRingBytes {
		return 0, fmt.Errorf("shmlink: ring of %d bytes: want %d to %d", n, shm.MinRingCapacity, maxRingBytes)
	}
	return 1 << bits.Len(uint(n-1)), nil
}

// FullRings is how many peers' worth of full-size rings a rank's links may
// take: a host of up to FullRings+1 ranks gives every link the ring asked
// for, a larger one shrinks them (HostRingBytes), so that a rank's shared
// memory grows with a constant, not with its peers.
const FullRings = 8

// MinHostRingBytes is the smallest ring HostRingBytes shrinks to: a Barrier's
// and a small AllReduce's frames still fit many times over, and a link of
// two such rings sets up in about a millisecond (BenchmarkSetup).
const MinHostRingBytes = 64 << 10

// HostRingBytes is the ring capacity each link of a host of localRanks
// ranks gets when HCCL_BUFFSIZE asks for ringBytes (0: DefaultRingBytes):
// ringBytes itself up to FullRings peers, beyond that the power of two at
// or below ringBytes*FullRings/(localRanks-1), and never below
// MinHostRingBytes (nor above ringBytes). A rank's links then hold at
// most about 2*FullRings*ringBytes, whatever the host's rank count, and
// the host's n(n-1)/2 links at most n*FullRings*ringBytes: memory and the
// time to set up a link (docs/performance.md, "Scale") grow
// with n, not n^2. A too small ringBytes is returned unchanged, for
// RingCapacity to refuse.
func HostRingBytes(ringBytes, localRanks int) int {
	if ringBytes == 0 {
		ringBytes = DefaultRingBytes
	}
	peers := localRanks - 1
	if peers <= FullRings || ringBytes <= MinHostRingBytes {
		return ringBytes
	}
	share := ringBytes / peers * FullRings
	return max(1<<(bits.Len(uint(share))-1), MinHostRingBytes)
}

// FitRingBytes shrinks ringBytes (a HostRingBytes result) until the links
// of a full mesh between localRanks ranks, two rings each, would take at
// most half of free bytes of /dev/shm: a job that opens every link
// (AlltoAll) then keeps them all in shared memory instead of sending the
// ones that do not fit over TCP, and leaves room for other jobs. It never
// goes below MinHostRingBytes (links that still do not fit go over TCP),
// nor changes a ring already that small.
func FitRingBytes(ringBytes, localRanks int, free uint64) int {
	if localRanks < 2 || ringBytes <= MinHostRingBytes {
		return ringBytes
	}
	fit := free / 2 / (uint64(localRanks) * uint64(localRanks-1))
	if uint64(ringBytes) <= fit {
		return ringBytes
	}
	if fit < MinHostRingBytes {
		return MinHostRingBytes
	}
	return 1 << (bits.Len64(fit) - 1)
}

// SegmentBytes returns the shared memory one link takes for a requested
// RingBytes, so that the runtime can check /dev/shm for all its links at
// once (shm.CheckSpace) before dialling any.
func SegmentBytes(ringBytes int) (int, error) {
	c, err := RingCapacity(ringBytes)
	if err != nil {
		return 0, err
	}
	return 2 * shm.RingBytes(c), nil
}

// ringsOf returns the two rings of a link segment, whose waits on this
// side follow wait: ring 0 carries the dialer's frames, ring 1 the
// listener's.
func ringsOf(mem []byte, capacity int, create bool, wait shm.WaitPolicy) (r0, r1 *shm.Ring, err error) {
	at := [2][]byte{mem, mem[shm.RingBytes(capacity):]}
	var r [2]*shm.Ring
	for i, b := range at {
		if create {
			r[i], err = shm.NewRing(b, capacity, wait)
		} else {
			r[i], err = shm.OpenRing(b, wait)
			if err == nil && r[i].Cap() != capacity {
				err = fmt.Errorf("ring %d has %d bytes, the dialer said %d", i, r[i].Cap(), capacity)
			}
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return r[0], r[1], nil
}

// warmRings reads every page of a link segment's two rings, so that the
// link's first calls run at the speed of its later ones (shm's
// prefault.go). Reading only the front of each ring and keeping the rings
// there while their backlog allowed cost less here but slowed the middle
// sizes: the writer then wrote the very lines the reader had just read,
// where a ring that goes round its whole data area writes lines a lap old
// (docs/performance.md, "Warm from the first call").
func warmRings(seg *shm.Segment) { seg.Prefault() }
