package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// AgentLink is the byte stream between the launcher and one agent: for SSH,
// the session's stdout and stdin.
type AgentLink struct {
	R io.Reader      // the agent's output: frames to the launcher
	W io.WriteCloser // the agent's input; closing it is EOF for the agent
	// Close ends the transport (session and connection) once the agent has
	// been told goodbye or is gone. May be nil.
	Close func() error
	// Lost, if not nil, is closed when the transport knows the link is
	// dead (the SSH keepalive went unanswered); Err then says why.
	Lost <-chan struct{}
	Err  func() error
	// Stderr, if not nil, is the agent's own stderr (its log and, when it
	// could not start, the shell's complaint); it is relayed to the log
	// and quoted in a failed handshake.
	Stderr io.Reader
	// JobKey, when set, is the job key the agent holds already (a Slurm
	// launch's link key): Start sends the ranks' HCCL_JOB_KEY empty and
	// the agent fills it in, so the key never crosses an unencrypted link.
	JobKey []byte
}

// HostLostError is the error of every rank of a host whose agent link was
// lost: the launcher no longer knows how those ranks end, and the agent
// there kills them when it notices.
type HostLostError struct {
	Host  string
	Ranks []int // the host's ranks still running when the link was lost
	Err   error
}

func (e *HostLostError) Error() string {
	return fmt.Sprintf("host %s (%s) lost: %v", e.Host, rankList(e.Ranks), e.Err)
}

func (e *HostLostError) Unwrap() error { return e.Err }

// rankList says "rank 2" or "ranks 2-3" or "ranks 1,4".
func rankList(r []int) string {
	if len(r) == 1 {
		return fmt.Sprintf("rank %d", r[0])
	}
	contiguous := len(r) > 1
	for i := 1; i < len(r); i++ {
		contiguous = contiguous && r[i] == r[i-1]+1
	}
	if contiguous {
		return fmt.Sprintf("ranks %d-%d", r[0], r[len(r)-1])
	}
	s := make([]string, len(r))
	for i, v := range r {
		s[i] = fmt.Sprint(v)
	}
	return "ranks " + strings.Join(s, ",")
}

// agentHandshake bounds the wait for the agent's Ready: an ssh session
// start plus a process exec, under load.
const agentHandshake = 20 * time.Second

// NewAgentSpawner drives the agent at the other end of link (already
// started, e.g. `hcclrun agent` over SSH) as the Spawner of host, which
// names the host in summaries. It says hello and waits for the agent's
// Ready; a failure there (the agent could not start, speaks another
// protocol version) is returned with the agent's stderr, and link is closed.
//
// The spawner watches the link: when the agent's frames stop for
// agentSilence, the stream ends or link.Lost fires, every rank of the host
// still running gets a *HostLostError from Wait.
func NewAgentSpawner(ctx context.Context, host string, link AgentLink, log *slog.Logger) (Spawner, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &agentSpawner{
		host: host, link: link, log: log,
		fw:      newFrameWriter(link.W),
		procs:   make(map[int]*remoteProc),
		starts:  make(map[int]chan agentMsg),
		lost:    make(chan struct{}),
		ready:   make(chan agentMsg, 1),
		staged:  make(chan agentMsg, 1),
		stopped: make(chan struct{}),
		errTail: &tailBuffer{max: 4 << 10},
	}
	if link.Stderr != nil {
		s.stderrDone = make(chan struct{})
		go s.relayStderr()
	}
	go s.readLoop()
	cwd, _ := os.Getwd()
	err := s.fw.sendMsg(msgHello, agentMsg{Version: agentProtoVersion, Cwd: cwd})
	var m agentMsg
	if err == nil {
		timer := time.NewTimer(agentHandshake)
		defer timer.Stop()
		select {
		case m = <-s.ready:
			if m.Err != "" {
				err = errors.New(m.Err)
			} else if m.Version != agentProtoVersion {
				err = fmt.Errorf("agent speaks protocol %d, launcher %d", m.Version, agentProtoVersion)
			}
		case <-s.lost:
			err = s.lostErr
		case <-timer.C:
			err = fmt.Errorf("no answer from the agent within %v", agentHandshake)
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		s.shutdown(false)
		if tail := s.agentStderr(); tail != "" {
			err = fmt.Errorf("%w; agent's stderr: %s", err, tail)
		}
		return nil, fmt.Errorf("start agent on %s: %w", host, err)
	}
	s.agentHost, s.agentPid, s.cpus, s.freePort = m.Hostname, m.Pid, m.CPUs, m.Port
	s.up.Store(true)
	log.Debug("agent ready", "host", host, "hostname", m.Hostname, "pid", m.Pid)
	go s.heartbeat()
	return s, nil
}

type agentSpawner struct {
	host      string
	link      AgentLink
	log       *slog.Logger
	fw        *frameWriter
	agentHost string
	agentPid  int
	cpus      []int // the CPUs the agent may use, as it reported them; nil: do not bind
	freePort  int   // a TCP port free on the agent's host when it started, 0 if it found none

	ready, staged chan agentMsg
	stopped       chan struct{} // closed by shutdown: the heartbeat stops
	stopOnce      sync.Once
	stderrDone    chan struct{}
	errTail       *tailBuffer
	up            atomic.Bool // the handshake is done: the agent's stderr goes to the log

	mu      sync.Mutex
	procs   map[int]*remoteProc
	starts  map[int]chan agentMsg
	lost    chan struct{} // closed when the link is gone
	lostErr error         // why; set before lost is closed
	bye     bool          // Close said goodbye: the end of the link is expected
}

// Host implements Spawner.
func (s *agentSpawner) Host() string { return s.host }

// readLoop dispatches the agent's frames until the link ends. Liveness: any
// frame counts; the heartbeat goroutine checks the silence.
func (s *agentSpawner) readLoop() {
	seen := make(chan struct{}, 1)
	go s.watch(seen)
	for {
		f, err := readFrame(s.link.R)
		if err != nil {
			if err == io.EOF {
				err = errors.New("the agent's stream ended")
			}
			s.markLost(err)
			return
		}
		select {
		case seen <- struct{}{}:
		default:
		}
		s.dispatch(f)
	}
}

// watch declares the link lost after agentSilence without a frame, or when
// the transport says so.
func (s *agentSpawner) watch(seen <-chan struct{}) {
	timer := time.NewTimer(agentSilence + agentHandshake) // the first frame may take a while
	defer timer.Stop()
	for {
		select {
		case <-seen:
			timer.Reset(agentSilence)
		case <-timer.C:
			s.markLost(fmt.Errorf("no heartbeat from the agent for %v", agentSilence))
			return
		case <-s.link.Lost:
			err := errors.New("transport lost")
			if s.link.Err != nil && s.link.Err() != nil {
				err = s.link.Err()
			}
			s.markLost(err)
			return
		case <-s.lost:
			return
		}
	}
}

func (s *agentSpawner) heartbeat() {
	tick := time.NewTicker(agentHeartbeat)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if err := s.fw.send(frame{typ: msgHeartbeat}); err != nil {
				s.markLost(fmt.Errorf("write to the agent: %w", err))
				return
			}
		case <-s.lost:
			return
		case <-s.stopped:
			return
		}
	}
}

func (s *agentSpawner) dispatch(f frame) {
	switch f.typ {
	case msgHeartbeat:
	case msgReady:
		select {
		case s.ready <- f.msg:
		default:
		}
	case msgStaged:
		select {
		case s.staged <- f.msg:
		default:
		}
	case msgStarted:
		s.mu.Lock()
		ch := s.starts[f.msg.Rank]
		delete(s.starts, f.msg.Rank)
		s.mu.Unlock()
		if ch != nil {
			ch <- f.msg
		}
	case msgOutput:
		s.mu.Lock()
		p := s.procs[f.rank]
		s.mu.Unlock()
		if p == nil {
			return
		}
		w := p.spec.Stdout
		if f.stream == streamStderr {
			w = p.spec.Stderr
		}
		if w != nil {
			_, _ = w.Write(f.data)
		}
	case msgExited:
		s.mu.Lock()
		p := s.procs[f.msg.Rank]
		delete(s.procs, f.msg.Rank)
		s.mu.Unlock()
		if p == nil {
			return
		}
		st := Exited(f.msg.Code)
		if f.msg.Signal != 0 {
			st = Signaled(syscall.Signal(f.msg.Signal))
		}
		var err error
		if f.msg.Err != "" {
			err = fmt.Errorf("rank %d on %s: %s", p.spec.Rank, s.host, f.msg.Err)
		}
		p.finish(st, err)
	default:
		s.log.Warn("agent sent an unexpected frame", "host", s.host, "type", f.typ)
	}
}

// markLost records why the link ended, fails pending starts and ends every
// running rank's Wait with a *HostLostError (unless Close said goodbye).
func (s *agentSpawner) markLost(err error) {
	s.mu.Lock()
	select {
	case <-s.lost:
		s.mu.Unlock()
		return
	default:
	}
	s.lostErr = err
	close(s.lost)
	procs := s.procs
	s.procs = map[int]*remoteProc{}
	starts := s.starts
	s.starts = map[int]chan agentMsg{}
	bye := s.bye
	s.mu.Unlock()
	s.fw.close()
	if !bye {
		s.log.Debug("agent link lost", "host", s.host, "err", err)
	}
	var ranks []int
	for r := range procs {
		ranks = append(ranks, r)
	}
	sort.Ints(ranks)
	hl := &HostLostError{Host: s.host, Ranks: ranks, Err: err}
	for _, p := range procs {
		p.finish(ExitStatus{Code: -1}, hl)
	}
	for _, ch := range starts {
		ch <- agentMsg{Err: hl.Error(), Code: ExitFailure}
	}
	// The agent may still be running (a cut link): close the transport
	// so that nothing waits on it; the agent kills its ranks on silence.
	if s.link.Close != nil && !bye {
		_ = s.link.Close()
	}
}

// StageRankTable implements Spawner: the agent stages the table on its host.
func (s *agentSpawner) StageRankTable(table []byte) (string, error) {
	if err := s.fw.sendMsg(msgStage, agentMsg{Data: table}); err != nil {
		return "", fmt.Errorf("stage rank table on %s: %w", s.host, err)
	}
	select {
	case m := <-s.staged:
		if m.Err != "" {
			return "", fmt.Errorf("stage rank table on %s: %s", s.host, m.Err)
		}
		return m.Path, nil
	case <-s.lost:
		return "", fmt.Errorf("stage rank table on %s: %w", s.host, s.lostErr)
	}
}

// Start implements Spawner.
func (s *agentSpawner) Start(spec ProcSpec) (Process, error) {
	p := &remoteProc{s: s, spec: spec, done: make(chan struct{})}
	reply := make(chan agentMsg, 1)
	s.mu.Lock()
	select {
	case <-s.lost:
		s.mu.Unlock()
		return nil, &StartError{Rank: spec.Rank, Host: s.host, Path: spec.Path, Err: s.lostErr}
	default:
	}
	s.starts[spec.Rank] = reply
	// Registered before the start so that no early output is dropped.
	s.procs[spec.Rank] = p
	s.mu.Unlock()
	env := spec.Env
	if s.link.JobKey != nil {
		env = make([]string, len(spec.Env))
		for i, kv := range spec.Env {
			if strings.HasPrefix(kv, EnvJobKey+"=") {
				kv = EnvJobKey + "="
			}
			env[i] = kv
		}
	}
	err := s.fw.sendMsg(msgStart, agentMsg{
		Rank: spec.Rank, Path: spec.Path, Args: spec.Args, Dir: spec.Dir, Env: env, CPUs: spec.CPUs, Stdin: spec.Stdin != nil,
	})
	if err != nil {
		s.markLost(fmt.Errorf("write to the agent: %w", err))
	}
	m := <-reply
	if m.Err != "" {
		s.mu.Lock()
		delete(s.procs, spec.Rank)
		s.mu.Unlock()
		return nil, &StartError{Rank: spec.Rank, Host: s.host, Path: spec.Path, Err: remoteError{msg: m.Err, code: m.Code}}
	}
	p.pid = m.Pid
	if spec.Stdin != nil {
		go p.feedStdin()
	}
	return p, nil
}

// Close implements Spawner: goodbye to the agent (which kills anything
// left and removes the table), then the transport ends.
func (s *agentSpawner) Close() error {
	s.mu.Lock()
	s.bye = true
	s.mu.Unlock()
	_ = s.fw.send(frame{typ: msgBye})
	s.shutdown(true)
	return nil
}

// shutdown closes the agent's stdin and waits briefly for its stream to
// end (the agent exits after goodbye or EOF), then closes the transport.
func (s *agentSpawner) shutdown(wait bool) {
	s.stopOnce.Do(func() { close(s.stopped) })
	s.fw.close()
	_ = s.link.W.Close()
	if wait {
		select {
		case <-s.lost:
		case <-time.After(2 * time.Second):
		}
	}
	if s.link.Close != nil {
		_ = s.link.Close()
	}
	s.markLost(ErrAgentClosed)
	if s.stderrDone != nil {
		select {
		case <-s.stderrDone:
		case <-time.After(time.Second):
		}
	}
}

// ErrAgentClosed is the end of an agent link that the launcher asked for.
var ErrAgentClosed = errors.New("agent link closed by the launcher")

func (s *agentSpawner) relayStderr() {
	defer close(s.stderrDone)
	buf := make([]byte, 4096)
	var line []byte
	for {
		n, err := s.link.Stderr.Read(buf)
		s.errTail.Write(buf[:n])
		line = append(line, buf[:n]...)
		for {
			i := strings.IndexByte(string(line), '\n')
			if i < 0 {
				break
			}
			s.logStderr(string(line[:i]))
			line = line[i+1:]
		}
		if err != nil {
			if len(line) > 0 {
				s.logStderr(string(line))
			}
			return
		}
	}
}

// logStderr logs a line of the agent's stderr: a warning once the agent
// runs, detail before (a failed start quotes it in its error anyway).
func (s *agentSpawner) logStderr(line string) {
	level := slog.LevelDebug
	if s.up.Load() {
		level = slog.LevelWarn
	}
	s.log.Log(context.Background(), level, "agent", "host", s.host, "stderr", line)
}

// agentStderr is the tail of what the agent wrote to stderr, on one line.
func (s *agentSpawner) agentStderr() string {
	return strings.Join(strings.Fields(s.errTail.String()), " ")
}

// remoteError is a start failure the agent reported, with the exit code
// the shell convention gives it there (127 not found, 126 not executable).
type remoteError struct {
	msg  string
	code int
}

func (e remoteError) Error() string { return e.msg }

// Is lets StartError.ExitCode map a remote failure as a local one.
func (e remoteError) Is(target error) bool {
	switch e.code {
	case ExitNotFound:
		return target == os.ErrNotExist
	case ExitCannotExec:
		return target == os.ErrPermission
	}
	return false
}

// remoteProc is a rank started by an agent.
type remoteProc struct {
	s    *agentSpawner
	spec ProcSpec
	pid  int

	once   sync.Once
	done   chan struct{}
	status ExitStatus
	err    error
}

func (p *remoteProc) finish(st ExitStatus, err error) {
	p.once.Do(func() {
		p.status, p.err = st, err
		close(p.done)
	})
}

// Pid implements Process: the pid on the rank's host.
func (p *remoteProc) Pid() int { return p.pid }

// Signal implements Process: the agent delivers sig to the rank's group.
// After the rank's exit (or the link's loss) it does nothing.
func (p *remoteProc) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.s.fw.sendMsg(msgSignal, agentMsg{Rank: p.spec.Rank, Signal: int(sig)}); err != nil {
		select {
		case <-p.s.lost:
			return nil // Wait reports the loss
		default:
		}
		return fmt.Errorf("signal rank %d (pid %d on %s): %w", p.spec.Rank, p.pid, p.s.host, err)
	}
	return nil
}

// Wait implements Process.
func (p *remoteProc) Wait() (ExitStatus, error) {
	<-p.done
	return p.status, p.err
}

// feedStdin forwards the rank's stdin in frames until EOF or the rank's end.
func (p *remoteProc) feedStdin() {
	buf := make([]byte, 32<<10)
	for {
		n, err := p.spec.Stdin.Read(buf)
		select {
		case <-p.done:
			return
		default:
		}
		if n > 0 {
			if p.s.fw.send(frame{typ: msgStdin, rank: p.spec.Rank, stream: streamStdin, data: append([]byte(nil), buf[:n]...)}) != nil {
				return
			}
		}
		if err != nil {
			_ = p.s.fw.sendMsg(msgStdinEOF, agentMsg{Rank: p.spec.Rank})
			return
		}
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
