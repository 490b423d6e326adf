package control

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"time"
)

// Limits of the wire format, checked by both encoder and decoder, so that
// a peer can make us allocate at most maxMessage bytes per message.
const (
	MaxKeySize   = 1024    // bytes of a key or barrier name
	MaxValueSize = 1 << 20 // bytes of a value
	MaxTextSize  = 4096    // bytes of an abort reason or error text
	maxMessage   = 1 + 8 + 1 + 4 + MaxKeySize + 4 + MaxValueSize + 4 + MaxTextSize

	// MaxStatusRanks is the largest job whose status fits one
	// StatusReply: at most maxStatusEntry bytes per rank, so a whole
	// reply stays within maxMessage (checked below at compile time).
	MaxStatusRanks = 1 << 16
	// maxStatusEntry is the longest encoding of one rank's status: the
	// flags byte, a uvarint sequence number (10 bytes for 64 bits) and a
	// uvarint of milliseconds capped at MaxUint32 (5 bytes).
	maxStatusEntry = 1 + binary.MaxVarintLen64 + 5
	maxStatusReply = 1 + 8 + 4 + MaxStatusRanks*maxStatusEntry
	// minStatusEntry is the shortest: flags and two one-byte uvarints.
	// The decoder checks a count against it before allocating.
	minStatusEntry = 3
)

// A compile-time proof that the largest StatusReply is not cut by the
// length cap: the constant underflows, and the build fails, otherwise.
const _ = uint(maxMessage - maxStatusReply)

// A message is a little-endian uint32 length n, then n bytes: a type byte
// and the type's fields. Strings and byte strings are a uint32 length and
// the bytes. No field is optional and nothing may follow the last one, so
// every message has exactly one encoding.
type msgType uint8

const (
	tJoin    msgType = 1  // c->s: Size
	tWelcome msgType = 2  // s->c: Heartbeat, LostAfter (milliseconds)
	tRefuse  msgType = 3  // s->c: Text; the server hangs up after it
	tPut     msgType = 4  // c->s: ID, Key, Value
	tGet     msgType = 5  // c->s: ID, Key
	tBarrier msgType = 6  // c->s: ID, Key (the barrier's name)
	tCancel  msgType = 7  // c->s: ID of a Get or Barrier the caller gave up on
	tReply   msgType = 8  // s->c: ID, Code, Value, Text
	tAbort   msgType = 9  // both: Origin, Text (reason); c->s Origin is ignored
	tLeave   msgType = 10 // c->s: orderly goodbye
	tPing    msgType = 11 // both: heartbeat: Seq, InCall, Where (the sender's progress; zero from the server)
	tStatus  msgType = 12 // c->s: ID, Seq, InCall: the caller's progress, and a request for everyone's
	// tStatusReply answers a Status: ID, then a uint32 count and one entry
	// per rank in rank order: a flags byte (bits 0-1 RankState, bit 2
	// InCall, the others zero), Seq as a uvarint, SilentFor as a uvarint
	// of milliseconds (at most MaxUint32). Uvarints must be minimal.
	tStatusReply msgType = 13
	// tClock asks for the server's clock: ID; the tReply's Value is the
	// server's time as 8 bytes of Unix nanoseconds (Client.Clock).
	tClock msgType = 14
)

// Bits of a status entry's flags byte.
const (
	flagStateMask = 0x3
	flagInCall    = 0x4
)

// Reply codes.
const (
	codeOK      = 0
	codeError   = 1 // Text says why
	codeAborted = 2 // the job was aborted; Text is the reason
	// codeCancelled answers a Cancel whose request was still waiting and
	// is now withdrawn.
	codeCancelled = 3
)

type msg struct {
	Type      msgType
	ID        uint64
	Size      uint32
	Heartbeat uint32 // milliseconds
	LostAfter uint32 // milliseconds
	Code      uint8
	Origin    int32
	Key       string
	Value     []byte
	Text      string
	Seq       uint64 // tPing, tStatus: the sender's collective number
	InCall    bool   // tPing, tStatus: inside collective Seq
	Where     uint64 // tPing: wire.Where, the sender's place inside the call
	Ranks     []RankStatus
}

// errBadMessage reports bytes that are not a valid message.
var errBadMessage = errors.New("bad control message")

// appendMsg appends m, with its length prefix, to b.
func appendMsg(b []byte, m *msg) ([]byte, error) {
	if len(m.Key) > MaxKeySize {
		return b, fmt.Errorf("key of %d bytes, limit %d", len(m.Key), MaxKeySize)
	}
	if len(m.Value) > MaxValueSize {
		return b, fmt.Errorf("value of %d bytes, limit %d", len(m.Value), MaxValueSize)
	}
	if len(m.Text) > MaxTextSize {
		m.Text = m.Text[:MaxTextSize] // texts are for people; cut, don't fail
	}
	start := len(b)
	b = append(b, 0, 0, 0, 0, byte(m.Type))
	switch m.Type {
	case tJoin:
		b = binary.LittleEndian.AppendUint32(b, m.Size)
	case tWelcome:
		b = binary.LittleEndian.AppendUint32(b, m.Heartbeat)
		b = binary.LittleEndian.AppendUint32(b, m.LostAfter)
	case tRefuse:
		b = appendStr(b, m.Text)
	case tPut:
		b = binary.LittleEndian.AppendUint64(b, m.ID)
		b = appendStr(b, m.Key)
		b = appendStr(b, string(m.Value))
	case tGet, tBarrier:
		b = binary.LittleEndian.AppendUint64(b, m.ID)
		b = appendStr(b, m.Key)
	case tCancel:
		b = binary.LittleEndian.AppendUint64(b, m.ID)
	case tReply:
		b = binary.LittleEndian.AppendUint64(b, m.ID)
		b = append(b, m.Code)
		b = appendStr(b, string(m.Value))
		b = appendStr(b, m.Text)
	case tAbort:
		b = binary.LittleEndian.AppendUint32(b, uint32(m.Origin))
		b = appendStr(b, m.Text)
	case tPing:
		b = appendProgress(b, m.Seq, m.InCall)
		b = binary.LittleEndian.AppendUint64(b, m.Where)
	case tClock:
		b = binary.LittleEndian.AppendUint64(b, m.ID)
	case tStatus:
		b = binary.LittleEndian.AppendUint64(b, m.ID)
		b = appendProgress(b, m.Seq, m.InCall)
	case tStatusReply:
		if len(m.Ranks) > MaxStatusRanks {
			return b[:start], fmt.Errorf("status of %d ranks, limit %d", len(m.Ranks), MaxStatusRanks)
		}
		b = binary.LittleEndian.AppendUint64(b, m.ID)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Ranks)))
		for i := range m.Ranks {
			r := &m.Ranks[i]
			if r.State > Lost {
				return b[:start], fmt.Errorf("%w: rank %d in state %d", errBadMessage, r.Rank, r.State)
			}
			f := byte(r.State)
			if r.InCall {
				f |= flagInCall
			}
			b = append(b, f)
			b = binary.AppendUvarint(b, r.Seq)
			b = binary.AppendUvarint(b, uint64(millis(r.SilentFor.Milliseconds())))
		}
	case tLeave:
	default:
		return b[:start], fmt.Errorf("%w: encode type %d", errBadMessage, m.Type)
	}
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b, nil
}

// appendProgress encodes a rank's progress: Seq, then InCall as one
// byte, 0 or 1.
func appendProgress(b []byte, seq uint64, inCall bool) []byte {
	b = binary.LittleEndian.AppendUint64(b, seq)
	if inCall {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendStr(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// decoder reads fields from a message body, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{errBadMessage}, args...)...)
	}
}

func (d *decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.fail("%s: %d bytes needed, %d left", what, n, len(d.b))
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) u8(what string) uint8 {
	if p := d.take(1, what); p != nil {
		return p[0]
	}
	return 0
}

func (d *decoder) u32(what string) uint32 {
	if p := d.take(4, what); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (d *decoder) u64(what string) uint64 {
	if p := d.take(8, what); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

// boolean reads a byte that must be 0 or 1.
func (d *decoder) boolean(what string) bool {
	v := d.u8(what)
	if v > 1 && d.err == nil {
		d.fail("%s byte %d", what, v)
	}
	return v == 1
}

// uvarint reads a minimally encoded uvarint: a longer encoding of the
// same value would give a message two encodings.
func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	switch {
	case n == 0:
		d.fail("%s: uvarint past the end", what)
		return 0
	case n < 0:
		d.fail("%s: uvarint over 64 bits", what)
		return 0
	case n != uvarintLen(v):
		d.fail("%s: uvarint of %d bytes for %d", what, n, v)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// uvarintLen is the length of v's minimal uvarint encoding.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

func (d *decoder) bytes(what string, limit int) []byte {
	n := d.u32(what)
	if d.err != nil {
		return nil
	}
	if n > uint32(limit) {
		d.fail("%s of %d bytes, limit %d", what, n, limit)
		return nil
	}
	return d.take(int(n), what)
}

// decodeMsg parses one message body (the bytes after the length prefix).
// Value aliases body.
func decodeMsg(body []byte) (msg, error) {
	d := decoder{b: body}
	m := msg{Type: msgType(d.u8("type"))}
	switch m.Type {
	case tJoin:
		m.Size = d.u32("size")
	case tWelcome:
		m.Heartbeat = d.u32("heartbeat")
		m.LostAfter = d.u32("lost after")
	case tRefuse:
		m.Text = string(d.bytes("text", MaxTextSize))
	case tPut:
		m.ID = d.u64("id")
		m.Key = string(d.bytes("key", MaxKeySize))
		m.Value = d.bytes("value", MaxValueSize)
	case tGet, tBarrier:
		m.ID = d.u64("id")
		m.Key = string(d.bytes("key", MaxKeySize))
	case tCancel:
		m.ID = d.u64("id")
	case tReply:
		m.ID = d.u64("id")
		m.Code = d.u8("code")
		m.Value = d.bytes("value", MaxValueSize)
		m.Text = string(d.bytes("text", MaxTextSize))
		if d.err == nil && m.Code > codeCancelled {
			d.fail("reply code %d", m.Code)
		}
	case tAbort:
		m.Origin = int32(d.u32("origin"))
		m.Text = string(d.bytes("reason", MaxTextSize))
	case tPing:
		m.Seq = d.u64("seq")
		m.InCall = d.boolean("in call")
		m.Where = d.u64("where")
	case tClock:
		m.ID = d.u64("id")
	case tStatus:
		m.ID = d.u64("id")
		m.Seq = d.u64("seq")
		m.InCall = d.boolean("in call")
	case tStatusReply:
		m.ID = d.u64("id")
		m.Ranks = d.statuses()
	case tLeave:
	default:
		if d.err == nil {
			d.fail("unknown type %d", m.Type)
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after a %d message", len(d.b), m.Type)
	}
	if d.err != nil {
		return msg{}, d.err
	}
	return m, nil
}

// statuses reads a StatusReply's count and entries. The count is
// checked against the bytes left before anything is allocated.
func (d *decoder) statuses() []RankStatus {
	n := d.u32("rank count")
	if d.err != nil {
		return nil
	}
	if n > MaxStatusRanks || int(n) > len(d.b)/minStatusEntry {
		d.fail("status of %d ranks in %d bytes, limit %d ranks", n, len(d.b), MaxStatusRanks)
		return nil
	}
	rs := make([]RankStatus, n)
	for i := range rs {
		f := d.u8("flags")
		seq := d.uvarint("seq")
		ms := d.uvarint("silent for")
		if d.err != nil {
			return nil
		}
		if f&^(flagStateMask|flagInCall) != 0 {
			d.fail("rank %d: flags %#x", i, f)
			return nil
		}
		if ms > math.MaxUint32 {
			d.fail("rank %d: silent for %d ms, limit %d", i, ms, uint64(math.MaxUint32))
			return nil
		}
		rs[i] = RankStatus{Rank: i, State: RankState(f & flagStateMask), Seq: seq,
			InCall: f&flagInCall != 0, SilentFor: time.Duration(ms) * time.Millisecond}
	}
	return rs
}

// readMsg reads one message from r. The length is checked against the cap
// before anything is allocated.
func readMsg(r *bufio.Reader) (msg, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return msg{}, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n == 0 || n > maxMessage {
		return msg{}, fmt.Errorf("%w: length %d, limit %d", errBadMessage, n, maxMessage)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return msg{}, err
	}
	return decodeMsg(body)
}

// millis converts a duration to the wire's milliseconds, saturating.
func millis(ms int64) uint32 {
	if ms < 0 {
		return 0
	}
	if ms > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(ms)
}
