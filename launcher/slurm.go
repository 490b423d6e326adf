package launcher

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	goruntime "runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/launcher/placement"
	"github.com/hcclrun/hcclrun/netio"
)

// Slurm says how a job inside a Slurm allocation reaches its nodes: one
// srun step starts an agent on every node of the placement, as Open MPI's
// Slurm launcher starts its daemons, so that the ranks live in Slurm's
// step (its cgroups, accounting, signals and cleanup) and no SSH is
// needed. Each agent dials back to the launcher over TCP, authenticated
// with a fresh link key that srun hands every agent on its standard input
// (never on a command line); the agent protocol then runs over that
// connection exactly as over an SSH session. That key is also the job key:
// the agents put it in their ranks' environment themselves, so it never
// crosses the network in the clear, as it does not over SSH.
type Slurm struct {
	// Srun is the srun to run; "" means "srun" from PATH.
	Srun string
	// Args are extra srun arguments, placed before the agent's command.
	Args []string
}

// slurmConnect bounds the wait for every agent of the step to dial back:
// a step start (credentials, slurmstepd on each node) plus an exec.
const slurmConnect = 60 * time.Second

// connectSlurm is connectHosts for a Slurm allocation: every node of the
// placement, this machine included, gets its agent from one srun step.
func connectSlurm(ctx context.Context, p *placement.Placement, rm Remote, log *slog.Logger) ([]Host, string, error) {
	names := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		names[i] = n.Host.Name
	}
	srun := rm.Slurm.Srun
	if srun == "" {
		srun = "srun"
	}
	addrs, err := slurmNodeAddrs(ctx, srun, names)
	if err != nil {
		return nil, "", err
	}
	controlIP, err := routeSource(addrs[0])
	if err != nil {
		return nil, "", err
	}
	key, err := wire.NewKey()
	if err != nil {
		return nil, "", err
	}
	ln, err := netio.Listen(net.JoinHostPort(controlIP, "0"), key, wire.Hello{Purpose: wire.PurposeAgent, Rank: wire.LauncherRank}, log)
	if err != nil {
		return nil, "", fmt.Errorf("listen for the agents: %w", err)
	}
	defer ln.Close()
	agentPath := rm.AgentPath
	if agentPath == "" {
		agentPath = "hcclrun"
	}
	nodelist := strings.Join(names, ",")
	args := append(srunArgs(len(names), nodelist), rm.Slurm.Args...)
	args = append(args, agentPath, "agent", "--connect", ln.Addr().String(), "--nodes", nodelist)
	start := time.Now()
	st, err := startStep(srun, args, wire.EncodeKey(key), log)
	if err != nil {
		return nil, "", err
	}
	st.users = len(p.Nodes)
	conns, err := acceptAgents(ctx, ln, st, names)
	log.Debug("slurm agents connected", "nodes", len(names), "took", time.Since(start), "err", err)
	if err != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		st.stop()
		return nil, "", err
	}
	hosts := make([]Host, len(p.Nodes))
	errs := make([]error, len(p.Nodes))
	var wg sync.WaitGroup
	for i, n := range p.Nodes {
		hosts[i].Ranks, hosts[i].Addr = n.Ranks, addrs[i]
		c := conns[i]
		var once sync.Once
		wg.Go(func() {
			hosts[i].Spawner, errs[i] = NewAgentSpawner(ctx, names[i], AgentLink{
				R: c, W: halfCloser{c}, JobKey: key,
				// The last link closed ends the step.
				Close: func() error { err := c.Close(); once.Do(st.release); return err },
			}, log)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, h := range hosts {
			if h.Spawner != nil {
				h.Spawner.Close()
			}
		}
		st.stop()
		return nil, "", fmt.Errorf("%w (no rank was started)", err)
	}
	log.Debug("slurm agents ready", "nodes", len(names), "took", time.Since(start))
	return hosts, net.JoinHostPort(controlIP, "0"), nil
}

// srunArgs is the step that runs one agent per node: exactly the nodes
// given, one task each, the step ended by Slurm when any agent fails
// (--kill-on-bad-exit), no MPI plugin, and no CPU binding of the agent
// (its ranks are bound by the launcher, and a step task bound to one CPU
// would confine every rank of its node to it). Standard input goes to
// every task: it carries the link key.
func srunArgs(n int, nodelist string) []string {
	return []string{
		fmt.Sprintf("--nodes=%d", n), fmt.Sprintf("--ntasks=%d", n), "--ntasks-per-node=1",
		"--kill-on-bad-exit=1", "--nodelist=" + nodelist, "--input=all", "--mpi=none",
		"--cpu-bind=none", "--job-name=hcclrun-agents",
	}
}

// slurmNodeAddrs is the address of each Slurm node (its NodeAddr), asked
// of sinfo next to srun in one call, else resolved by name.
func slurmNodeAddrs(ctx context.Context, srun string, names []string) ([]string, error) {
	sinfo := "sinfo"
	if i := strings.LastIndexByte(srun, '/'); i >= 0 {
		sinfo = srun[:i+1] + "sinfo"
	}
	known := map[string]string{}
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(qctx, sinfo, "-h", "-N", "-n", strings.Join(names, ","), "-o", "%N %o").Output()
	if err == nil {
		for line := range strings.SplitSeq(string(out), "\n") {
			if f := strings.Fields(line); len(f) == 2 {
				known[f[0]] = f[1]
			}
		}
	}
	addrs := make([]string, len(names))
	for i, n := range names {
		a := known[n]
		if a == "" {
			a = n
		}
		ip, err := hostIP(a)
		if err != nil {
			return nil, fmt.Errorf("slurm node %s: %w", n, err)
		}
		addrs[i] = ip
	}
	return addrs, nil
}

// acceptAgents waits for the agent of every node to dial back; each says
// which node it is by its index in the --nodes list (Hello.Rank).
func acceptAgents(ctx context.Context, ln *netio.Listener, st *step, names []string) ([]net.Conn, error) {
	conns := make([]net.Conn, len(names))
	type acc struct {
		c   net.Conn
		h   wire.Hello
		err error
	}
	got := make(chan acc)
	go func() {
		for {
			c, h, err := ln.Accept()
			select {
			case got <- acc{c, h, err}:
			case <-st.done:
				if c != nil {
					c.Close()
				}
				return
			}
			if err != nil {
				return
			}
		}
	}()
	timer := time.NewTimer(slurmConnect)
	defer timer.Stop()
	missing := func() string {
		var m []string
		for i, c := range conns {
			if c == nil {
				m = append(m, names[i])
			}
		}
		return strings.Join(m, ",")
	}
	for left := len(names); left > 0; {
		select {
		case a := <-got:
			if a.err != nil {
				return conns, fmt.Errorf("wait for the agents: %w", a.err)
			}
			i := int(a.h.Rank)
			if a.h.Purpose != wire.PurposeAgent || i >= len(names) || conns[i] != nil {
				a.c.Close()
				continue
			}
			conns[i] = a.c
			left--
		case <-st.done:
			return conns, fmt.Errorf("srun ended before the agents of %s connected (nothing was started): %s", missing(), st.why())
		case <-timer.C:
			return conns, fmt.Errorf("the agents of %s did not connect within %v (nothing was started); srun: %s", missing(), slurmConnect, st.why())
		case <-ctx.Done():
			return conns, ctx.Err()
		}
	}
	return conns, nil
}

// stepLinger is how long srun gets to end on its own after the agents'
// goodbye, and again after SIGTERM. It ends at once after a clean job;
// after a lost node it waits for that node's slurmstepd, which Slurm
// gives up on only much later, and the job's outcome is known already.
const stepLinger = 2 * time.Second

// step is the running srun of the agents.
type step struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed when srun has exited
	err    error         // srun's exit, set before done is closed
	stderr *tailBuffer
	log    *slog.Logger

	mu    sync.Mutex
	users int // the spawners not yet closed; the last one ends the step
}

// startStep runs srun in its own process group (a terminal's Ctrl-C is
// the launcher's to handle, not srun's, which would print step status on
// one and cancel on two) and writes the link key to its stdin, which srun
// copies to every agent.
func startStep(srun string, args []string, key string, log *slog.Logger) (*step, error) {
	cmd := exec.Command(srun, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	st := &step{cmd: cmd, done: make(chan struct{}), stderr: &tailBuffer{max: 4 << 10}, log: log}
	relayed := make(chan struct{})
	started := make(chan error)
	// Started and reaped on one locked thread: Pdeathsig fires when the
	// thread that forked ends, not the process (as local.go's ranks).
	go func() {
		goruntime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		<-relayed
		st.err = cmd.Wait()
		close(st.done)
	}()
	if err := <-started; err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			err = fmt.Errorf("%w (is Slurm installed here? --launcher ssh reaches the nodes over SSH instead)", err)
		}
		return nil, fmt.Errorf("start %s: %w", srun, err)
	}
	log.Debug("srun started", "pid", cmd.Process.Pid, "args", args)
	go func() {
		defer close(relayed)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			line := sc.Text()
			st.stderr.Write([]byte(line + "\n"))
			// Clusters without task/affinity say so for --cpu-bind=none.
			if strings.Contains(line, "lacks support for cpu binding") {
				continue
			}
			log.Warn("srun", "stderr", line)
		}
		_, _ = io.Copy(io.Discard, errPipe)
	}()
	if _, err := io.WriteString(in, key+"\n"); err != nil {
		st.stop()
		return nil, fmt.Errorf("hand the link key to srun: %w; srun: %s", err, st.why())
	}
	in.Close()
	return st, nil
}

// why is what srun said and how it ended, for an error.
func (s *step) why() string {
	msg := strings.Join(strings.Fields(s.stderr.String()), " ")
	select {
	case <-s.done:
		if s.err != nil {
			msg = strings.TrimSpace(msg + " (" + s.err.Error() + ")")
		} else if msg == "" {
			msg = "exited 0"
		}
	default:
	}
	if msg == "" {
		msg = "no message"
	}
	return msg
}

// release is an agent link's Close: after the last one, srun should end
// on its own (every agent said goodbye and exited); it is stopped
// otherwise.
func (s *step) release() {
	s.mu.Lock()
	s.users--
	last := s.users == 0
	s.mu.Unlock()
	if !last {
		return
	}
	select {
	case <-s.done:
	case <-time.After(stepLinger):
		s.log.Debug("srun did not end after the agents' goodbye; stopping it", "pid", s.cmd.Process.Pid)
		s.stop()
	}
}

// stop ends srun: SIGTERM to its group (srun then cancels the step, and
// Slurm kills what is left of it on every node), SIGKILL if it lingers.
func (s *step) stop() {
	pid := s.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-s.done:
		return
	case <-time.After(stepLinger):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-s.done
}

// jobKey is the job key of a job on hosts: the link key of its srun step,
// which its agents hold, else a fresh one.
func jobKey(hosts []Host) (wire.Key, error) {
	for _, h := range hosts {
		if s, ok := h.Spawner.(*agentSpawner); ok && s.link.JobKey != nil {
			return s.link.JobKey, nil
		}
	}
	return wire.NewKey()
}

// halfCloser is the write side of an agent's TCP link: closing it sends
// FIN (EOF for the agent) and leaves the read side open for its goodbye.
type halfCloser struct{ c net.Conn }

func (h halfCloser) Write(p []byte) (int, error) { return h.c.Write(p) }

func (h halfCloser) Close() error {
	if tc, ok := h.c.(interface{ CloseWrite() error }); ok {
		return tc.CloseWrite()
	}
	return h.c.Close()
}

// DialLauncher is the agent's side of a Slurm launch: it reads the link
// key (one line of hex) from keyIn, srun's standard input, finds node, its
// Slurm node name (SLURMD_NODENAME), in nodes (the launcher's --nodes
// list), and dials the launcher at addr as that node's agent. The
// returned connection carries the agent protocol (RunAgent's In and Out);
// the key, in hex, is the job key (AgentConfig.JobKey).
func DialLauncher(ctx context.Context, addr, nodes, node string, keyIn io.Reader) (net.Conn, string, error) {
	line, err := bufio.NewReader(keyIn).ReadString('\n')
	if err != nil {
		return nil, "", fmt.Errorf("read the link key from standard input: %w", err)
	}
	key, err := wire.ParseKey(strings.TrimSpace(line))
	if err != nil {
		return nil, "", fmt.Errorf("link key: %w", err)
	}
	names, err := placement.ExpandHostlist(nodes)
	if err != nil {
		return nil, "", fmt.Errorf("--nodes: %w", err)
	}
	idx := -1
	short, _, _ := strings.Cut(node, ".")
	for i, n := range names {
		if n == node || n == short {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, "", fmt.Errorf("this node (%q) is not among the job's nodes %s", node, nodes)
	}
	dctx, cancel := context.WithTimeout(ctx, slurmConnect)
	defer cancel()
	c, _, err := netio.Dial(dctx, addr, key, wire.Hello{Purpose: wire.PurposeAgent, Rank: uint32(idx)})
	if err != nil {
		return nil, "", fmt.Errorf("dial the launcher at %s: %w", addr, err)
	}
	return c, wire.EncodeKey(key), nil
}
