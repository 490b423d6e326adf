package control

import (
	"errors"
	"net"
	"time"
)

// patientReader is the io.Reader under each side's bufio.Reader: it judges
// the peer's silence by what is in the socket, not by the reader's own
// punctuality. Go's netpoller fails a Read whose deadline has passed
// without trying the socket, so a process that was not scheduled for
// LostAfter (an oversubscribed host, a GC) would declare a peer lost whose
// heartbeats have been waiting in its buffer all along. After a timeout,
// Read therefore tries again with the deadline re-armed for grace: a live
// peer's bytes are there at once, a silent peer still has nothing, and is
// lost after wait+grace. An attempt that itself returns late, by grace or
// more (the reader was off the CPU again, as on a host with a load of a
// hundred), proves nothing and is made again; one that returns on time
// with nothing is the peer's silence.
//
// It sits under the bufio.Reader so that the retries happen inside one
// Read: bufio and readMsg never see the timeout, and a message that was
// half read when it struck is completed, not dropped.
//
// Each Read arms the deadline itself, so silence is measured from the
// last bytes received, whatever message they belong to. With wait zero it
// is a plain Read and leaves the deadline to the caller (the client's
// join, whose deadline follows its context). Not safe for concurrent use;
// one read loop owns it.
type patientReader struct {
	conn  net.Conn
	wait  time.Duration // LostAfter; 0: plain reads
	grace time.Duration // each further attempt (a heartbeat interval)
}

func (p *patientReader) Read(b []byte) (int, error) {
	if p.wait <= 0 {
		return p.conn.Read(b)
	}
	p.conn.SetReadDeadline(time.Now().Add(p.wait))
	n, err := p.conn.Read(b)
	for n == 0 && isTimeout(err) {
		deadline := time.Now().Add(p.grace)
		p.conn.SetReadDeadline(deadline)
		n, err = p.conn.Read(b)
		if time.Since(deadline) < p.grace {
			break // awake at its deadline: a timeout now is the peer's silence
		}
	}
	return n, err
}

// silence is how long a peer must be silent before Read fails (on a
// reader that is not starved).
func (p *patientReader) silence() time.Duration { return p.wait + p.grace }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
