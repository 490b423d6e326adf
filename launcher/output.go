package launcher

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"
)

// maxLineBytes bounds how much of one unterminated line a rank may make the
// launcher hold. A longer line is written in pieces of this size, each tagged
// on its own; everything shorter comes out whole. It is far above any pipe
// buffer (64 KiB) so that ordinary long lines are never split.
const maxLineBytes = 8 << 20

// partialFlushDelay is how long an unterminated line of the rank that reads
// stdin may wait, in untagged mode, before it is forwarded as it is: a
// prompt ("name? ") must reach the user although no newline follows until
// they answer. Only that rank does this, and only untagged, because a rank
// that stalls in the middle of a long line would otherwise have it split.
const partialFlushDelay = 500 * time.Millisecond

// outputMux serialises the output of every rank onto the launcher's stdout
// and stderr. Writers hand it complete lines only, and it writes each batch
// with one Write under one lock shared by both streams, so a line of one rank
// is never interleaved with another's, even when stdout and stderr are the
// same pipe and a line is longer than PIPE_BUF.
type outputMux struct {
	mu     sync.Mutex
	tagged bool
	jobNum int // the "1" of "[1,rank]": Open MPI's job number
	// broken, if set, is told (once per writer, under mu) that a
	// destination failed, e.g. stdout is a pipe whose reader went away.
	broken func(error)
}

// writer returns the relay for one stream of one rank. name is "stdout" or
// "stderr" and appears in the tag. interactive marks the rank that reads
// stdin (see partialFlushDelay).
func (m *outputMux) writer(dst io.Writer, rank int, name string, interactive bool) *lineWriter {
	w := &lineWriter{mux: m, dst: dst}
	if m.tagged {
		w.prefix = fmt.Appendf(nil, "[%d,%d]<%s>:", m.jobNum, rank, name)
	}
	w.flushPartial = interactive && !m.tagged
	return w
}

// lineWriter buffers a rank's stream up to the end of its current line and
// forwards whole lines, each prefixed with the tag when tagging is on. It is
// written by one goroutine at a time (the spawner's copier) and flushed by
// Run after the rank's Wait has returned; mu orders those with the idle
// flush of untagged partial lines.
type lineWriter struct {
	mux  *outputMux
	mu   sync.Mutex
	idle *time.Timer // forwards a partial line left alone, if flushPartial

	flushPartial bool
	dst          io.Writer
	prefix       []byte // nil when output is not tagged
	pending      []byte // the unterminated tail of what was written so far
	out          []byte // scratch for tagged batches, reused
	err          error  // first error of dst: later output is dropped, not blocked on
}

// Write implements io.Writer. It never fails, so that a broken launcher
// stdout does not make a rank's copier stop reading and block the rank: the
// output is dropped instead and the error is kept for Flush.
func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.write(p)
	if w.flushPartial && len(w.pending) > 0 {
		if w.idle == nil {
			w.idle = time.AfterFunc(partialFlushDelay, w.flushIdle)
		} else {
			w.idle.Reset(partialFlushDelay)
		}
	}
	return n, nil
}

// flushIdle forwards an untagged partial line that has waited
// partialFlushDelay.
func (w *lineWriter) flushIdle() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) > 0 {
		w.emit(w.pending, false)
		w.pending = w.pending[:0]
	}
}

func (w *lineWriter) write(p []byte) int {
	n := len(p)
	last := bytes.LastIndexByte(p, '\n')
	if last < 0 {
		w.pending = append(w.pending, p...)
		for len(w.pending) >= maxLineBytes {
			w.emit(w.pending[:maxLineBytes], true)
			w.pending = append(w.pending[:0], w.pending[maxLineBytes:]...)
		}
		return n
	}
	if len(w.pending) > 0 {
		// Complete the pending line with p's first line in one batch.
		w.pending = append(w.pending, p[:last+1]...)
		w.emit(w.pending, false)
		w.pending = w.pending[:0]
	} else {
		w.emit(p[:last+1], false)
	}
	w.pending = append(w.pending, p[last+1:]...)
	return n
}

// Flush forwards the unterminated tail, if any; with tagging the line is
// terminated so that the next tag starts a line of its own. It returns the
// first error the destination reported.
func (w *lineWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.idle != nil {
		w.idle.Stop()
	}
	if len(w.pending) > 0 {
		w.emit(w.pending, w.prefix != nil)
		w.pending = w.pending[:0]
	}
	return w.err
}

// emit writes lines (whole lines, or one piece when terminate is set) with
// one Write under the mux lock.
func (w *lineWriter) emit(lines []byte, terminate bool) {
	batch := lines
	if w.prefix != nil {
		w.out = w.out[:0]
		for len(lines) > 0 {
			i := bytes.IndexByte(lines, '\n')
			if i < 0 {
				i = len(lines) - 1
			}
			w.out = append(w.out, w.prefix...)
			w.out = append(w.out, lines[:i+1]...)
			lines = lines[i+1:]
		}
		if terminate && w.out[len(w.out)-1] != '\n' {
			w.out = append(w.out, '\n')
		}
		batch = w.out
	}
	w.mux.mu.Lock()
	defer w.mux.mu.Unlock()
	if w.err != nil {
		return
	}
	if _, err := w.dst.Write(batch); err != nil {
		w.err = err
		if w.mux.broken != nil {
			w.mux.broken(err)
		}
	}
}
