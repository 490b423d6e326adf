package launcher

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// drainTimeout bounds how long a rank's output is read after the rank and its
// process group are gone. Only a descendant that left the group (setsid) can
// still hold the pipes open then, and it must not keep the job alive.
const drainTimeout = time.Second

// LocalSpawner starts ranks on this machine. Every rank runs in a process
// group of its own and gets SIGKILL as its parent-death signal, so that
// nothing survives the launcher, even `kill -9` of it.
//
// The zero value is not usable; call NewLocalSpawner. Its methods are safe
// for concurrent use.
type LocalSpawner struct {
	host string
	// agent marks the spawner of an hcclrun agent: its table directories
	// are named agentTableDirPrefix+host+"-"+pid, and it sweeps only those
	// of its own host name (hosts may share /tmp, as the test harness's
	// do; the lock of stale.go decides which are stale).
	agent bool

	mu   sync.Mutex
	dir  string   // private directory of the staged rank table, "" before staging
	lock *os.File // dir's lock file, locked for as long as dir exists
}

// NewLocalSpawner returns a spawner for this machine that names itself host
// in summaries ("" means the machine's hostname).
func NewLocalSpawner(host string) *LocalSpawner {
	if host == "" {
		host, _ = os.Hostname()
		if host == "" {
			host = "localhost"
		}
	}
	return &LocalSpawner{host: host}
}

// newAgentLocalSpawner is the LocalSpawner of an agent (see the agent field).
func newAgentLocalSpawner(host string) *LocalSpawner {
	s := NewLocalSpawner(host)
	s.agent = true
	return s
}

// Host implements Spawner.
func (s *LocalSpawner) Host() string { return s.host }

// StageRankTable implements Spawner: the table goes into a fresh directory
// of mode 0700 under os.TempDir, as a file of mode 0600, both removed by
// Close. The directory's lock file is locked until then (stale.go).
func (s *LocalSpawner) StageRankTable(table []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		prefix := tableDirPrefix
		if s.agent {
			// A crashed host's agent could not clean up: its successor
			// on the same host does.
			prefix = agentTableDirPrefix + s.host + "-"
		}
		sweepStaleTables(os.TempDir(), prefix)
		pattern := fmt.Sprintf("%s%d-", prefix, os.Getpid())
		dir, err := os.MkdirTemp("", pattern)
		if err != nil {
			return "", fmt.Errorf("stage rank table on %s: %w", s.host, err)
		}
		lock, err := lockTableDir(dir)
		if err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("stage rank table on %s: %w", s.host, err)
		}
		s.dir, s.lock = dir, lock
	}
	path := filepath.Join(s.dir, tableFileName)
	// O_EXCL|0600: the file is never readable by others, not even between
	// create and chmod.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("stage rank table on %s: %w", s.host, err)
	}
	if _, err := f.Write(table); err != nil {
		f.Close()
		return "", fmt.Errorf("stage rank table on %s: %w", s.host, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("stage rank table on %s: %w", s.host, err)
	}
	return path, nil
}

// Close implements Spawner: it removes the staged rank table.
func (s *LocalSpawner) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		return nil
	}
	err := os.RemoveAll(s.dir)
	// Unlocked only now: a sweep never sees the directory half removed.
	s.lock.Close()
	s.dir, s.lock = "", nil
	if err != nil {
		return fmt.Errorf("remove rank table on %s: %w", s.host, err)
	}
	return nil
}

// Start implements Spawner.
//
// The child is forked from a goroutine locked to its OS thread, and that
// goroutine stays on the thread until the child has been reaped: Linux
// delivers the parent-death signal when the forking *thread* exits, and the
// Go runtime is free to retire an idle thread otherwise, which would kill a
// healthy rank at random.
func (s *LocalSpawner) Start(spec ProcSpec) (Process, error) {
	path, err := exec.LookPath(spec.Path)
	if err != nil {
		return nil, &StartError{Rank: spec.Rank, Host: s.host, Path: spec.Path, Err: err}
	}
	p := &localProc{spec: spec, host: s.host, exited: make(chan struct{}), done: make(chan struct{})}
	started := make(chan error, 1)
	go p.run(path, started)
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// localProc is one rank started by LocalSpawner.
type localProc struct {
	spec ProcSpec
	host string
	pid  int

	mu     sync.Mutex
	gone   bool          // the rank has exited: signals must not be sent any more
	exited chan struct{} // closed when the rank has exited (not yet reaped)
	done   chan struct{} // closed when status and err are final
	status ExitStatus
	err    error
}

// run starts the rank and supervises it until it is reaped, on one locked
// OS thread (see Start). It reports the start's outcome on started.
func (p *localProc) run(path string, started chan<- error) {
	goruntime.LockOSThread()
	// No UnlockOSThread: when this goroutine returns, the runtime ends the
	// thread, which is harmless once the child has been reaped.

	startErr := func(err error) {
		started <- &StartError{Rank: p.spec.Rank, Host: p.host, Path: p.spec.Path, Err: err}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		startErr(err)
		return
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		startErr(err)
		return
	}
	var inR, inW *os.File
	if p.spec.Stdin != nil {
		if inR, inW, err = os.Pipe(); err != nil {
			closeAll(outR, outW, errR, errW)
			startErr(err)
			return
		}
	}

	cmd := &exec.Cmd{
		Path:   path,
		Args:   append([]string{p.spec.Path}, p.spec.Args...),
		Env:    withThreads(mergeEnv(os.Environ(), p.spec.Env), goruntime.NumCPU()),
		Dir:    p.spec.Dir,
		Stdout: outW,
		Stderr: errW,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if inR != nil {
		cmd.Stdin = inR // an *os.File: exec passes it on without a copier
	}
	// The child inherits this thread's CPU binding, across exec.
	restore, err := bindThread(p.spec.CPUs)
	if err != nil {
		closeAll(outR, outW, errR, errW, inR, inW)
		startErr(err)
		return
	}
	err = cmd.Start()
	restore()
	// The child holds its own copies; keeping the write ends open here
	// would hide the rank's EOF from the copiers.
	closeAll(outW, errW, inR)
	if err != nil {
		closeAll(outR, errR, inW)
		startErr(err)
		return
	}
	p.pid = cmd.Process.Pid
	started <- nil

	var copiers sync.WaitGroup
	copiers.Add(2)
	go p.copyOut(&copiers, outR, p.spec.Stdout)
	go p.copyOut(&copiers, errR, p.spec.Stderr)
	if inW != nil {
		go p.copyIn(inW)
	}

	p.waitExit()
	// Anything the rank left in its group dies with it: a job leaves no
	// process behind, and its pipes reach EOF.
	_ = unix.Kill(-p.pid, unix.SIGKILL)
	if inW != nil {
		inW.Close() // stop feeding stdin; copyIn's next write fails
	}
	drained := make(chan struct{})
	go func() { copiers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		// A descendant escaped the group and holds the pipes: stop reading.
		_ = outR.SetReadDeadline(time.Now())
		_ = errR.SetReadDeadline(time.Now())
		<-drained
	}
	closeAll(outR, errR)

	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		p.status = Exited(0)
	case errors.As(err, &ee):
		p.status = statusOf(ee.Sys().(syscall.WaitStatus))
	default:
		p.err = fmt.Errorf("rank %d on %s: wait: %w", p.spec.Rank, p.host, err)
	}
	close(p.done)
}

// waitExit blocks until the rank has exited, without reaping it, then marks
// it gone. Until it is reaped its pid (and so its process group id) cannot
// be reused, so a Signal that raced with the exit still reaches the right
// group, and after gone is set no Signal is sent at all.
func (p *localProc) waitExit() {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	p.mu.Lock()
	p.gone = true
	p.mu.Unlock()
	close(p.exited)
}

// copyOut relays one output pipe of the rank to w until EOF (or the drain
// deadline).
func (p *localProc) copyOut(wg *sync.WaitGroup, r *os.File, w io.Writer) {
	defer wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && w != nil {
			_, _ = w.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// copyIn feeds the rank's stdin until the source ends or the rank's end is
// closed. A Read blocked on a terminal cannot be interrupted: the goroutine
// then lives until the next input arrives, and that input is dropped.
func (p *localProc) copyIn(w *os.File) {
	_, _ = io.Copy(w, p.spec.Stdin)
	w.Close()
}

// Pid implements Process.
func (p *localProc) Pid() int { return p.pid }

// Signal implements Process: sig goes to the rank's process group, and to
// the rank itself should it have left that group.
func (p *localProc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return nil
	}
	gerr := unix.Kill(-p.pid, sig)
	perr := unix.Kill(p.pid, sig)
	if perr != nil && perr != unix.ESRCH && gerr != nil {
		return fmt.Errorf("signal rank %d (pid %d on %s): %w", p.spec.Rank, p.pid, p.host, perr)
	}
	return nil
}

// Wait implements Process.
func (p *localProc) Wait() (ExitStatus, error) {
	<-p.done
	return p.status, p.err
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}
