package shmlink

import (
	"context"
	"errors"
	"fmt"

	"github.com/hcclrun/hcclrun/shm"
)

// Shared reads: the sender writes a share of a payload it handed over in
// place.
//
// A receiver that copies a direct payload into its destination (not one
// it reduces piece by piece) offers the sender a share of the copy
// (shm's share.go) when the sender said, posting it, that it has nothing
// else to do (flagSenderWaits: a Broadcast's root). The sender, waiting
// for the acknowledgement in WaitPosted, writes pieces from the front of
// the payload into the receiver's destination with process_vm_writev
// while the receiver reads pieces from the back, so that both cores copy.
// What a Broadcast's leaf gains at np 2 is in docs/performance.md.
//
// A sender with receives of its own in the step is not offered a share:
// it would take pieces only once its own receives are done, if at all,
// and the receiver pays for the pieces' system calls and the cursor's
// cache-line transfers anyway; offering in an AllGather, where both sides
// read, made it slower (docs/measurements.md#shared-reads). Where ranks
// outnumber cores the runtime turns the offers off (Host.Shares,
// DialConfig.NoShare).

// shareMin is the smallest part of a payload offered: below it the
// offer's few cache-line transfers and the pieces' system calls are a
// noticeable part of the copy.
const shareMin = 256 << 10

// sharePieceMin is the smallest piece; an offer has at most sharePieces
// pieces of at least that size, rounded to pages. Each piece is a system
// call, and below 128 KiB the calls' cost shows in the copy
// (docs/measurements.md#shared-reads).
const (
	sharePieceMin = 128 << 10
	sharePieces   = 16
)

// sharePiece is the piece size for a part of n bytes.
func sharePiece(n int) int {
	p := max(sharePieceMin, (n+sharePieces-1)/sharePieces)
	return (p + 4095) &^ 4095
}

// readShared copies the current direct payload into p (len(p) is the
// payload's), sharing the copy with the sender when it is large enough.
func (l *Link) readShared(ctx context.Context, p []byte) error {
	head := min(len(p), l.spliced) // in the pipe: only this side can read it
	rest := p[head:]
	if len(rest) < shareMin || l.mapped != nil || !l.senderWaits || !l.share || l.rx.ShareBroken() {
		return l.readDirect(p, 0)
	}
	if head > 0 {
		if err := l.readDirect(p[:head], 0); err != nil {
			return err
		}
	}
	l.rx.OfferShare(l.remote+uint64(head), shm.Addr(rest), len(rest), sharePiece(len(rest)))
	for {
		off, n, ok := l.rx.ClaimBack()
		if !ok {
			break
		}
		if err := l.readDirect(rest[off:off+n], head+off); err != nil {
			// Take back what the sender has not taken, and wait for
			// what it has: it writes into p, which the caller reuses.
			for ok {
				_, _, ok = l.rx.ClaimBack()
			}
			_, _ = l.rx.AwaitShare(ctx)
			return err
		}
	}
	front, err := l.rx.AwaitShare(ctx)
	if errors.Is(err, shm.ErrShareBroken) {
		// The sender could not write its share: read it here. The
		// payload is intact until this side acknowledges it.
		return l.readDirect(rest[:front], head)
	}
	if err != nil {
		return fmt.Errorf("waiting for rank %d's share of its payload: %w", l.peer, err)
	}
	return nil
}

// writeShare is the sender's part of a shared read (shm.ShareWriter): it
// writes the n bytes at src, which must lie within a payload this side
// handed over since WaitPosted last returned, to dst in the peer.
func (l *Link) writeShare(dst, src uint64, n int) error {
	for _, p := range l.unacked {
		if start := shm.Addr(p); src >= start && src-start+uint64(n) <= uint64(len(p)) {
			off := int(src - start)
			return shm.WriteProcess(l.pid, p[off:off+n], dst)
		}
	}
	return fmt.Errorf("rank %d asked for %d bytes at %#x, not of a payload handed over", l.peer, n, src)
}
