package pmi2

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Limits of the protocol (MPICH's pmi2.h, which Slurm follows).
const (
	MaxKeyLen = 64
	MaxValLen = 1024
	// maxMsg bounds a message the client accepts: a value plus its
	// key, command and the other fields.
	maxMsg = 4096
)

// Client is one task's PMI-2 session.
type Client struct {
	rw   io.ReadWriter
	r    *bufio.Reader
	c    io.Closer // may be nil
	rank int
	size int
}

// Error is an answer the server gave with a non-zero rc.
type Error struct {
	Cmd string // the request, e.g. "kvs-fence"
	RC  int
	Msg string // the server's errmsg, if any
}

func (e *Error) Error() string {
	if e.Msg != "" {
		return fmt.Sprintf("pmi2: %s: rc=%d: %s", e.Cmd, e.RC, e.Msg)
	}
	return fmt.Sprintf("pmi2: %s: rc=%d", e.Cmd, e.RC)
}

// Connect opens a session over rw, the task's end of PMI_FD: the PMI-1
// init, then fullinit as rank (PMI_RANK; -1 when unknown lets the
// server tell) of job (PMI_JOBID, may be empty). If rw is an io.Closer,
// Finalize closes it.
func Connect(rw io.ReadWriter, rank int, job string) (*Client, error) {
	c := &Client{rw: rw, r: bufio.NewReaderSize(rw, maxMsg)}
	if cl, ok := rw.(io.Closer); ok {
		c.c = cl
	}
	// One write: slurmstepd reads the init line with a single read.
	if _, err := io.WriteString(rw, "cmd=init pmi_version=2 pmi_subversion=0\n"); err != nil {
		return nil, fmt.Errorf("pmi2: init: %w", err)
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("pmi2: init: no answer: %w", err)
	}
	f := map[string]string{}
	for kv := range strings.FieldsSeq(line) {
		k, v, _ := strings.Cut(kv, "=")
		f[k] = v
	}
	if f["cmd"] != "response_to_init" {
		return nil, fmt.Errorf("pmi2: init: unexpected answer %q", strings.TrimSpace(line))
	}
	if f["rc"] != "0" || f["pmi_version"] != "2" {
		return nil, fmt.Errorf("pmi2: init: the server refuses PMI 2.0 (rc=%s, version %s.%s): is this srun --mpi=pmi2?",
			f["rc"], f["pmi_version"], f["pmi_subversion"])
	}
	if job == "" {
		job = "0"
	}
	resp, err := c.call("fullinit", "pmijobid", job, "pmirank", strconv.Itoa(rank), "threaded", "FALSE")
	if err != nil {
		return nil, err
	}
	if c.rank, err = intField(resp, "fullinit", "rank"); err != nil {
		return nil, err
	}
	if c.size, err = intField(resp, "fullinit", "size"); err != nil {
		return nil, err
	}
	if c.size < 1 || c.rank < 0 || c.rank >= c.size {
		return nil, fmt.Errorf("pmi2: fullinit: rank %d of size %d", c.rank, c.size)
	}
	return c, nil
}

// Rank is this task's rank, as fullinit answered.
func (c *Client) Rank() int { return c.rank }

// Size is the number of tasks of the job.
func (c *Client) Size() int { return c.size }

// Put stores key=value for the other tasks, visible to them after the
// next Fence.
func (c *Client) Put(key, value string) error {
	if err := checkKV(key, value); err != nil {
		return err
	}
	_, err := c.call("kvs-put", "key", key, "value", value)
	return err
}

// Fence waits for every task's Fence; afterwards every pair put before
// it is visible to every task.
func (c *Client) Fence() error {
	_, err := c.call("kvs-fence")
	return err
}

// Get reads a pair put by any task before the last Fence; ok is false if
// no task put key.
func (c *Client) Get(key string) (value string, ok bool, err error) {
	if err := checkKV(key, ""); err != nil {
		return "", false, err
	}
	resp, err := c.call("kvs-get", "jobid", "", "srcid", "-1", "key", key)
	if err != nil {
		return "", false, err
	}
	return resp["value"], strings.EqualFold(resp["found"], "TRUE"), nil
}

// JobAttr reads a job attribute, e.g. "PMI_process_mapping".
func (c *Client) JobAttr(key string) (value string, ok bool, err error) {
	if err := checkKV(key, ""); err != nil {
		return "", false, err
	}
	resp, err := c.call("info-getjobattr", "key", key)
	if err != nil {
		return "", false, err
	}
	return resp["value"], strings.EqualFold(resp["found"], "TRUE"), nil
}

// Finalize ends the session and closes the socket.
func (c *Client) Finalize() error {
	_, err := c.call("finalize")
	if c.c != nil {
		if cerr := c.c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Close closes the socket without finalize (after a failure).
func (c *Client) Close() error {
	if c.c != nil {
		return c.c.Close()
	}
	return nil
}

func checkKV(key, value string) error {
	switch {
	case key == "" || len(key) > MaxKeyLen:
		return fmt.Errorf("pmi2: key %q: want 1 to %d bytes", key, MaxKeyLen)
	case len(value) > MaxValLen:
		return fmt.Errorf("pmi2: value of %s: %d bytes, at most %d", key, len(value), MaxValLen)
	case strings.ContainsAny(key, ";=\n") || strings.ContainsAny(value, "\n"):
		return fmt.Errorf("pmi2: key %q or its value holds a separator", key)
	}
	return nil
}

// call sends cmd with its pairs and reads the answer, which must be
// cmd-response with rc=0.
func (c *Client) call(cmd string, kv ...string) (map[string]string, error) {
	if _, err := c.rw.Write(Encode(cmd, kv...)); err != nil {
		return nil, fmt.Errorf("pmi2: %s: %w", cmd, err)
	}
	body, err := ReadMessage(c.r)
	if err != nil {
		return nil, fmt.Errorf("pmi2: %s: %w", cmd, err)
	}
	resp, err := Decode(body)
	if err != nil {
		return nil, fmt.Errorf("pmi2: %s: %w", cmd, err)
	}
	if resp["cmd"] != cmd+"-response" {
		return nil, fmt.Errorf("pmi2: %s: answered by %q", cmd, resp["cmd"])
	}
	if rc := resp["rc"]; rc != "0" {
		n, _ := strconv.Atoi(rc)
		if n == 0 {
			n = -1
		}
		return nil, &Error{Cmd: cmd, RC: n, Msg: resp["errmsg"]}
	}
	return resp, nil
}

func intField(resp map[string]string, cmd, key string) (int, error) {
	s, ok := resp[key]
	if !ok {
		return 0, fmt.Errorf("pmi2: %s: no %s in the answer", cmd, key)
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("pmi2: %s: %s=%q: not an integer", cmd, key, s)
	}
	return n, nil
}

// Encode frames one message: "cmd=NAME;k=v;...;" behind its 6-byte
// length. kv holds keys and values in turn; ';' in a value is doubled.
func Encode(cmd string, kv ...string) []byte {
	var b strings.Builder
	b.WriteString("cmd=" + cmd + ";")
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(kv[i] + "=" + strings.ReplaceAll(kv[i+1], ";", ";;") + ";")
	}
	return append([]byte(fmt.Sprintf("%-6d", b.Len())), b.String()...)
}

// ReadMessage reads one framed message and returns its body.
func ReadMessage(r io.Reader) (string, error) {
	var hdr [6]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("the PMI server closed the connection: %w", err)
		}
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hdr[:])))
	if err != nil || n < 0 || n > maxMsg {
		return "", fmt.Errorf("bad message length %q", hdr[:])
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return "", fmt.Errorf("truncated message of %d bytes: %w", n, err)
	}
	return string(body), nil
}

// Decode splits a message body into its pairs; the first must be cmd.
// A repeated key keeps its first value (Slurm's fullinit answer has none,
// but MPICH's spawn has several argv).
func Decode(body string) (map[string]string, error) {
	m := map[string]string{}
	first := true
	for i := 0; i < len(body); {
		eq := strings.IndexByte(body[i:], '=')
		if eq < 0 {
			if strings.TrimSpace(body[i:]) == "" {
				break
			}
			return nil, fmt.Errorf("bad message %q: %q has no '='", body, body[i:])
		}
		key := body[i : i+eq]
		i += eq + 1
		var val strings.Builder
		for ; i < len(body); i++ {
			if body[i] == ';' {
				if i+1 < len(body) && body[i+1] == ';' {
					val.WriteByte(';')
					i++
					continue
				}
				break
			}
			val.WriteByte(body[i])
		}
		if i >= len(body) {
			return nil, fmt.Errorf("bad message %q: not terminated by ';'", body)
		}
		i++ // the ';'
		if first && key != "cmd" {
			return nil, fmt.Errorf("bad message %q: does not begin with cmd=", body)
		}
		first = false
		if _, dup := m[key]; !dup {
			m[key] = val.String()
		}
	}
	if first {
		return nil, fmt.Errorf("empty message")
	}
	return m, nil
}
