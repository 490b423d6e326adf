package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// agentHeartbeat is how often each side of an agent link sends a heartbeat,
// and agentSilence how long a side waits without any frame before it
// declares the other gone. Five missed beats: a loaded 2-core machine may
// stall a process for a second, never for five.
const (
	agentHeartbeat = time.Second
	agentSilence   = 6 * time.Second
)

// AgentConfig is what RunAgent needs: the link to the launcher (the SSH
// session's stdin and stdout) and where to log.
type AgentConfig struct {
	In  io.Reader // frames from the launcher
	Out io.Writer // frames to the launcher
	// Signals delivers the signals the agent got (SIGTERM, SIGHUP, SIGINT):
	// each means the session is being torn down, so the ranks are killed.
	Signals <-chan os.Signal
	Logger  *slog.Logger // nil discards; the CLI logs to stderr, which the launcher relays
	// JobKey, when set (a Slurm launch: DialLauncher's key), is put in
	// every rank's empty HCCL_JOB_KEY: the launcher does not send it.
	JobKey string
}

// RunAgent is `hcclrun agent`: the per-host side of a multi-host job. It
// starts the ranks the launcher asks for with a LocalSpawner (own process
// group, SIGKILL as parent-death signal, so that they die with the agent),
// relays their output and exit statuses, delivers the launcher's signals,
// and kills every rank it started when its link to the launcher ends: stdin
// EOF, a write error, agentSilence without a frame (a cut network), or a
// signal to the agent itself. sshd is not trusted to do any of this (it
// keeps processes that ignore their stdio, and ignores SSH signals for
// root). RunAgent returns nil after the launcher's goodbye, an error
// describing why the link ended otherwise; either way no rank is left.
func RunAgent(ctx context.Context, cfg AgentConfig) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &agent{
		fw:     newFrameWriter(cfg.Out),
		log:    log,
		frames: make(chan frame, 64),
		exited: make(chan int, 64),
		ranks:  make(map[int]*agentRank),
		jobKey: cfg.JobKey,
	}
	go a.readLoop(cfg.In)
	if err := a.handshake(); err != nil {
		return err
	}
	err := a.serve(ctx, cfg.Signals)
	a.shutdown()
	return err
}

type agent struct {
	fw       *frameWriter
	log      *slog.Logger
	spawner  *LocalSpawner
	frames   chan frame
	readErr  error // set before frames is closed
	exited   chan int
	ranks    map[int]*agentRank
	lastSeen time.Time
	jobKey   string
}

type agentRank struct {
	proc  Process
	stdin chan []byte // nil when the rank has no stdin from the launcher; closed at EOF
	done  chan struct{}
}

func (a *agent) readLoop(r io.Reader) {
	for {
		f, err := readFrame(r)
		if err != nil {
			if err == io.EOF {
				err = errors.New("the launcher closed the link (stdin EOF)")
			} else {
				err = fmt.Errorf("read from the launcher: %w", err)
			}
			a.readErr = err
			close(a.frames)
			return
		}
		a.frames <- f
	}
}

// handshake waits for Hello and answers Ready.
func (a *agent) handshake() error {
	timer := time.NewTimer(agentSilence)
	defer timer.Stop()
	var f frame
	select {
	case g, ok := <-a.frames:
		if !ok {
			return a.readErr
		}
		f = g
	case <-timer.C:
		return fmt.Errorf("no hello from the launcher within %v", agentSilence)
	}
	if f.typ != msgHello {
		return fmt.Errorf("first frame has type %d, want hello", f.typ)
	}
	host, _ := os.Hostname()
	cpus, _ := allowedCPUs() // for the launcher's binding (bind.go); none leaves this host's ranks unbound
	port, _ := freePort()    // none leaves MASTER_PORT to the launcher's own pick
	ready := agentMsg{Version: agentProtoVersion, Hostname: host, Pid: os.Getpid(), CPUs: cpus, Port: port}
	if f.msg.Version != agentProtoVersion {
		ready.Err = fmt.Sprintf("agent speaks protocol %d, launcher %d: use the same hcclrun on every host", agentProtoVersion, f.msg.Version)
		_ = a.fw.sendMsg(msgReady, ready)
		return errors.New(ready.Err)
	}
	if f.msg.Cwd != "" {
		// Relative program paths and the ranks' working directory follow
		// the launcher's, as with mpirun; a directory this host lacks
		// leaves the agent where sshd put it (the home directory).
		if err := os.Chdir(f.msg.Cwd); err != nil {
			a.log.Debug("agent: launcher's directory missing here", "dir", f.msg.Cwd, "err", err)
		}
	}
	a.spawner = newAgentLocalSpawner(host)
	a.lastSeen = time.Now()
	return a.fw.sendMsg(msgReady, ready)
}

// serve handles frames until the goodbye or the end of the link.
func (a *agent) serve(ctx context.Context, sigs <-chan os.Signal) error {
	tick := time.NewTicker(agentHeartbeat)
	defer tick.Stop()
	for {
		select {
		case f, ok := <-a.frames:
			if !ok {
				return a.readErr
			}
			a.lastSeen = time.Now()
			if f.typ == msgBye {
				return nil
			}
			if err := a.handle(f); err != nil {
				return err
			}
		case rank := <-a.exited:
			delete(a.ranks, rank)
		case <-tick.C:
			if s := time.Since(a.lastSeen); s > agentSilence {
				return fmt.Errorf("nothing heard from the launcher for %v", s.Round(time.Millisecond))
			}
			if err := a.fw.send(frame{typ: msgHeartbeat}); err != nil {
				return fmt.Errorf("write to the launcher: %w", err)
			}
		case sig := <-sigs:
			return fmt.Errorf("agent got %v", sig)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (a *agent) handle(f frame) error {
	switch f.typ {
	case msgHeartbeat:
	case msgStage:
		path, err := a.spawner.StageRankTable(f.msg.Data)
		m := agentMsg{Path: path}
		if err != nil {
			m.Err = err.Error()
		}
		return a.fw.sendMsg(msgStaged, m)
	case msgStart:
		return a.start(f.msg)
	case msgStdin:
		if r := a.ranks[f.rank]; r != nil && r.stdin != nil {
			select {
			case r.stdin <- f.data:
			case <-r.done: // the rank is gone; its input is dropped
			}
		}
	case msgStdinEOF:
		if r := a.ranks[f.msg.Rank]; r != nil && r.stdin != nil {
			close(r.stdin)
			r.stdin = nil
		}
	case msgSignal:
		if r := a.ranks[f.msg.Rank]; r != nil {
			if err := r.proc.Signal(syscall.Signal(f.msg.Signal)); err != nil {
				a.log.Warn("agent: signal rank", "rank", f.msg.Rank, "err", err)
			}
		}
	default:
		return fmt.Errorf("unexpected frame of type %d from the launcher", f.typ)
	}
	return nil
}

func (a *agent) start(m agentMsg) error {
	rank := m.Rank
	if _, dup := a.ranks[rank]; dup {
		return a.fw.sendMsg(msgStarted, agentMsg{Rank: rank, Err: fmt.Sprintf("rank %d started twice", rank), Code: ExitFailure})
	}
	r := &agentRank{done: make(chan struct{})}
	if a.jobKey != "" {
		for i, kv := range m.Env {
			if kv == EnvJobKey+"=" {
				m.Env[i] = kv + a.jobKey
			}
		}
	}
	spec := ProcSpec{
		Rank: rank, Path: m.Path, Args: m.Args, Dir: m.Dir, Env: m.Env, CPUs: m.CPUs,
		Stdout: &agentOutput{fw: a.fw, rank: rank, stream: streamStdout},
		Stderr: &agentOutput{fw: a.fw, rank: rank, stream: streamStderr},
	}
	if m.Stdin {
		r.stdin = make(chan []byte, 256)
		spec.Stdin = &chanReader{ch: r.stdin, done: r.done}
	}
	p, err := a.spawner.Start(spec)
	if err != nil {
		reply := agentMsg{Rank: rank, Err: err.Error(), Code: ExitCode(err)}
		var se *StartError
		if errors.As(err, &se) {
			reply.Err = innermost(se.Err).Error()
		}
		return a.fw.sendMsg(msgStarted, reply)
	}
	r.proc = p
	a.ranks[rank] = r
	if err := a.fw.sendMsg(msgStarted, agentMsg{Rank: rank, Pid: p.Pid()}); err != nil {
		return err
	}
	go func() {
		st, err := p.Wait()
		close(r.done)
		m := agentMsg{Rank: rank, Code: st.Code, Signal: int(st.Signal)}
		if err != nil {
			m.Err = err.Error()
		}
		// Sent after Wait, so after every output frame of the rank.
		_ = a.fw.sendMsg(msgExited, m)
		a.exited <- rank
	}()
	return nil
}

// shutdown kills every rank still running, waits for them and removes the
// staged table.
func (a *agent) shutdown() {
	for rank, r := range a.ranks {
		if err := r.proc.Signal(syscall.SIGKILL); err != nil {
			a.log.Warn("agent: kill rank", "rank", rank, "err", err)
		}
	}
	for len(a.ranks) > 0 {
		delete(a.ranks, <-a.exited)
	}
	if a.spawner != nil {
		if err := a.spawner.Close(); err != nil {
			a.log.Warn("agent: clean up", "err", err)
		}
	}
	a.fw.close()
}

// agentOutput relays one stream of a rank to the launcher in frames. It
// never fails: a dead link is noticed by the agent's loop, and a rank must
// not block on it meanwhile.
type agentOutput struct {
	fw     *frameWriter
	rank   int
	stream byte
}

func (o *agentOutput) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		n := min(len(rest), maxOutputChunk)
		if o.fw.send(frame{typ: msgOutput, rank: o.rank, stream: o.stream, data: rest[:n]}) != nil {
			break
		}
		rest = rest[n:]
	}
	return len(p), nil
}

// chanReader reads the stdin chunks the launcher sent for one rank.
type chanReader struct {
	ch   <-chan []byte
	done <-chan struct{}
	buf  []byte
}

func (r *chanReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		select {
		case b, ok := <-r.ch:
			if !ok {
				return 0, io.EOF
			}
			r.buf = b
		case <-r.done:
			return 0, io.EOF
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
