package launcher

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The launcher<->agent protocol runs over the SSH session's stdin (launcher
// to agent) and stdout (agent to launcher). Both directions carry frames:
//
//	length uint32 big-endian  bytes that follow: 1 (type) + len(body)
//	type   uint8              one of the msg* constants
//	body                      msgOutput and msgStdin: rank uint32, stream
//	                          uint8, then the raw bytes; every other type:
//	                          one JSON object (the agentMsg fields it uses)
//
// Output is binary because it is the bulk of the traffic; the rest is rare
// and JSON keeps it readable in a hex dump and easy to extend. The job key
// travels inside msgStart's environment, so it is never on a command line
// (the remote `ps` would show it). Either side sends msgHeartbeat every
// agentHeartbeat; a side that hears nothing at all for agentSilence treats
// the other as gone (a cut link stalls TCP for minutes otherwise).

// Frame types.
const (
	msgHello     byte = 1 + iota // launcher: protocol version, working directory
	msgReady                     // agent: version, hostname, pid
	msgStage                     // launcher: the rank table (Data)
	msgStaged                    // agent: its path (Path) or Err
	msgStart                     // launcher: start rank Rank (Path, Args, Dir, Env, Stdin)
	msgStarted                   // agent: rank Rank runs as Pid, or Err/Code
	msgStdin                     // launcher: bytes for rank's stdin (binary body)
	msgStdinEOF                  // launcher: rank's stdin ended
	msgSignal                    // launcher: deliver Signal to rank Rank's group
	msgOutput                    // agent: bytes a rank wrote (binary body)
	msgExited                    // agent: rank Rank ended (Code, Signal) or Err
	msgHeartbeat                 // either: still here
	msgBye                       // launcher: kill what is left, clean up, exit
	msgLast                      // not a type: one past the last
)

// agentProtoVersion is bumped on any incompatible change; Hello and Ready
// carry it, and a mismatch is refused with both versions in the error.
const agentProtoVersion = 1

// maxFrame bounds one frame. Output is sent in chunks of at most
// maxOutputChunk; a rank table of 65536 ranks is a few MiB.
const (
	maxFrame       = 64 << 20
	maxOutputChunk = 64 << 10
)

// Streams in msgOutput and msgStdin.
const (
	streamStdin  byte = 0
	streamStdout byte = 1
	streamStderr byte = 2
)

// frame is one decoded frame.
type frame struct {
	typ byte
	// Binary frames.
	rank   int
	stream byte
	data   []byte
	// JSON frames.
	msg agentMsg
}

// agentMsg holds the fields of every JSON frame; each type uses some.
type agentMsg struct {
	Version  int      `json:"v,omitempty"`
	Cwd      string   `json:"cwd,omitempty"`
	Hostname string   `json:"host,omitempty"`
	Pid      int      `json:"pid,omitempty"`
	Rank     int      `json:"rank,omitempty"`
	Path     string   `json:"path,omitempty"`
	Args     []string `json:"args,omitempty"`
	Dir      string   `json:"dir,omitempty"`
	Env      []string `json:"env,omitempty"`  // holds HCCL_JOB_KEY: never log a msgStart
	CPUs     []int    `json:"cpus,omitempty"` // msgReady: the CPUs the agent may use; msgStart: bind the rank to these
	Port     int      `json:"port,omitempty"` // msgReady: a TCP port free on the agent's host (MASTER_PORT when rank 0 runs there)
	Stdin    bool     `json:"stdin,omitempty"`
	Data     []byte   `json:"data,omitempty"`
	Signal   int      `json:"sig,omitempty"`
	Code     int      `json:"code,omitempty"`
	Err      string   `json:"err,omitempty"`
}

func binaryType(t byte) bool { return t == msgOutput || t == msgStdin }

// readFrame reads one frame. Any malformed frame is an error naming what is
// wrong; the caller then drops the link (the peer is not an hcclrun of this
// version, or the stream is corrupted).
func readFrame(r io.Reader) (frame, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			err = fmt.Errorf("truncated frame header: %w", err)
		}
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	f := frame{typ: hdr[4]}
	if n < 1 || n > maxFrame {
		return frame{}, fmt.Errorf("frame length %d out of range 1..%d", n, maxFrame)
	}
	if f.typ == 0 || f.typ >= msgLast {
		return frame{}, fmt.Errorf("unknown frame type %d", f.typ)
	}
	body := make([]byte, n-1)
	if _, err := io.ReadFull(r, body); err != nil {
		return frame{}, fmt.Errorf("truncated frame of type %d (%d bytes): %w", f.typ, n, noEOF(err))
	}
	return f, f.decodeBody(body)
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (f *frame) decodeBody(body []byte) error {
	if binaryType(f.typ) {
		if len(body) < 5 {
			return fmt.Errorf("frame of type %d: body of %d bytes, want at least 5", f.typ, len(body))
		}
		r := binary.BigEndian.Uint32(body[:4])
		if r > 1<<30 {
			return fmt.Errorf("frame of type %d: rank %d out of range", f.typ, r)
		}
		f.rank, f.stream, f.data = int(r), body[4], body[5:]
		if f.stream > streamStderr || (f.typ == msgStdin) != (f.stream == streamStdin) {
			return fmt.Errorf("frame of type %d: bad stream %d", f.typ, f.stream)
		}
		return nil
	}
	if len(body) == 0 {
		return nil // heartbeat, bye
	}
	if err := json.Unmarshal(body, &f.msg); err != nil {
		return fmt.Errorf("frame of type %d: %w", f.typ, err)
	}
	if f.msg.Rank < 0 || f.msg.Pid < 0 {
		return fmt.Errorf("frame of type %d: negative rank or pid", f.typ)
	}
	return nil
}

// appendFrame encodes a frame.
func appendFrame(dst []byte, f frame) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, f.typ)
	if binaryType(f.typ) {
		dst = binary.BigEndian.AppendUint32(dst, uint32(f.rank))
		dst = append(dst, f.stream)
		dst = append(dst, f.data...)
	} else if f.typ != msgHeartbeat && f.typ != msgBye {
		b, err := json.Marshal(f.msg)
		if err != nil {
			return dst[:start], fmt.Errorf("encode frame of type %d: %w", f.typ, err)
		}
		dst = append(dst, b...)
	}
	n := len(dst) - start - 4
	if n > maxFrame {
		return dst[:start], fmt.Errorf("frame of type %d: %d bytes exceeds %d", f.typ, n, maxFrame)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst, nil
}

// frameWriter serialises frames onto one stream from many goroutines. The
// first write error is sticky: after it every send fails at once, so that
// nothing blocks on a dead link.
type frameWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	buf []byte
	err error
}

func newFrameWriter(w io.Writer) *frameWriter {
	return &frameWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// errWriterClosed is the sticky error after close.
var errWriterClosed = errors.New("agent link closed")

func (fw *frameWriter) send(f frame) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.err != nil {
		return fw.err
	}
	var err error
	if fw.buf, err = appendFrame(fw.buf[:0], f); err != nil {
		return err
	}
	if _, err = fw.w.Write(fw.buf); err == nil {
		err = fw.w.Flush()
	}
	if err != nil {
		fw.err = err
	}
	if cap(fw.buf) > 1<<20 {
		fw.buf = nil // do not keep a rank table's worth of memory
	}
	return err
}

func (fw *frameWriter) sendMsg(typ byte, m agentMsg) error { return fw.send(frame{typ: typ, msg: m}) }

// close makes every later send fail.
func (fw *frameWriter) close() {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.err == nil {
		fw.err = errWriterClosed
	}
}
