package shmlink

import (
	"github.com/hcclrun/hcclrun/internal/wire"
)

// Arrived implements transport.Arriver: it reports whether the next frame
// is here whole, in a fast box or committed to the ring with all of its
// payload (or, for a payload left in the sender's memory, its reference),
// so that RecvHeader and the payload's read that follow do not wait, and
// the payload length its header gives. It does not consume anything. A link
// that is closed, broken or between a header and its payload reports ok,
// with length -1: the read that follows fails or goes on at once.
func (l *Link) Arrived() (payload int, ok bool) {
	if l.closed.Load() || l.recvErr != nil || l.inFrame {
		return -1, true
	}
	var h wire.Header
	box, inRing := l.rx.NextFrame()
	if box != nil {
		if h.Decode(box) != nil {
			return -1, true
		}
		return int(h.Len), true
	}
	if !inRing {
		return 0, false
	}
	run, total := l.rx.Unread()
	if len(run) < wire.HeaderSize {
		return 0, false // a header split where the ring wraps: rare, read it the usual way
	}
	flags, err := h.DecodeFlagged(run)
	if err != nil {
		return -1, true
	}
	want := wire.HeaderSize + int(h.Len)
	if flags != 0 {
		want = wire.HeaderSize + directRefSize
	}
	return int(h.Len), total >= want
}
