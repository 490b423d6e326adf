package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hcclrun/hcclrun/netio/control"
	"github.com/hcclrun/hcclrun/runtime/executor"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/selector"
	"github.com/hcclrun/hcclrun/runtime/topo"
	"github.com/hcclrun/hcclrun/runtime/transport/shmlink"
)

// controlPlane is what the runtime needs of the launcher's control service
// (netio/control's client satisfies it).
type controlPlane interface {
	Put(ctx context.Context, key string, value []byte) error
	Get(ctx context.Context, key string) ([]byte, error)
	Barrier(ctx context.Context, name string) error
	Abort(reason string) error
	Done() <-chan struct{}
	Err() error
	Close() error
	SetProgress(seq uint64, inCall bool)
	Status(ctx context.Context) ([]control.RankStatus, error)
	Heartbeat() time.Duration
}

// Comm is a communicator: the ranks of one job and the links between them.
// Its methods are safe for concurrent use; collectives on one Comm run one
// at a time.
type Comm struct {
	job   Job
	knobs tunables
	log   *slog.Logger
	ctl   controlPlane
	links *linkSet

	sel        *selector.Selector
	layout     *plan.Layout // the job's servers (layout.go); nil: one
	lastChoice choiceMade   // the selector's last answer (select.go), under mu
	warming    bool         // Init's own first call runs (warmup.go)
	obs        *observer    // HCCL_TRACE, HCCL_REPORT (trace.go); nil when off
	obsOff     *observer    // the observer SetTracing(false) set aside

	mu     sync.Mutex         // held while a collective runs
	exec   *executor.Executor // channel 0's
	chans  channels           // the others (channels.go)
	seq    uint64             // sequence number of the last collective
	p2pSeq map[int]uint64     // point-to-point messages per peer and direction
	plans  planCache
	last   lastCall // the last collective's plan, for a call that repeats it (repeat.go)
	// policyGen counts SetAlgo's and SetChannels' changes: a compiled
	// graph's plans made before the last change are made again (graph.go)
	policyGen uint64
	cur       current   // the running collective
	timer     execTimer // HCCL_EXEC_TIMEOUT
	// postTuner times large payloads in place and through the rings
	// (posttune.go), under mu
	postTuner postTuner

	family // split.go: the communicator's id, and what it shares with the rank's others

	broken    atomic.Pointer[error] // set once: the communicator is aborted
	closed    atomic.Bool
	closeOnce sync.Once
	watchDone chan struct{}
}

// Init joins the job that hcclrun started: it reads the rank's identity from
// the environment (or WithJob), connects to the control plane, publishes the
// rank's data endpoint and waits until every rank has joined. It is bounded
// by HCCL_CONNECT_TIMEOUT (120 seconds unless set; WithConnectTimeout
// overrides it) and by ctx; past that bound it fails with ErrTimeout.
func Init(ctx context.Context, opts ...Option) (*Comm, error) {
	var s settings
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&s)
		}
	}
	job, knobs, err := resolve(&s)
	if err != nil {
		return nil, &OpError{Op: "Init", Rank: -1, Peer: -1, Step: -1, Err: fmt.Errorf("%w: %w", ErrInvalidArgument, err)}
	}
	log := s.logger
	if log == nil {
		log = defaultLogger(knobs.Debug)
	}
	ctlLog := log // the control client names the rank itself
	log = log.With("rank", job.Rank)
	tf, err := readTableFacts(job.RankTableFile, job.Size, job.Rank)
	if err != nil {
		job.host.shut()
		return nil, &OpError{Op: "Init", Rank: job.Rank, Peer: -1, Step: -1, Err: fmt.Errorf("%w: %w", ErrInvalidArgument, err)}
	}
	sel, err := newSelector(knobs, hostCPUs(tf.serverCPUs, ""), tf.handoff, log)
	if err != nil {
		job.host.shut()
		return nil, &OpError{Op: "Init", Rank: job.Rank, Peer: -1, Step: -1, Err: fmt.Errorf("%w: %w", ErrInvalidArgument, err)}
	}
	layout, known := tf.layout, tf.fromTable || job.Size == 1
	switch {
	case job.Servers != nil:
		if len(job.Servers) != job.Size {
			err = fmt.Errorf("Job.Servers names the servers of %d ranks, the job has %d", len(job.Servers), job.Size)
		} else {
			layout, err = plan.NewLayout(job.Servers)
		}
		if err != nil {
			job.host.shut()
			return nil, &OpError{Op: "Init", Rank: job.Rank, Peer: -1, Step: -1, Err: fmt.Errorf("%w: %w", ErrInvalidArgument, err)}
		}
		known = true
	case job.RanksPerServer > 0:
		layout, known = plan.EvenLayout(job.Size, job.RanksPerServer), true
	}
	fail := func(err error) error {
		job.host.shut()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w after %v (HCCL_CONNECT_TIMEOUT, WithConnectTimeout): %w", ErrTimeout, knobs.ConnectTimeout, err)
		}
		return &OpError{Op: "Init", Rank: job.Rank, Peer: -1, Step: -1, Err: err}
	}
	if knobs.ConnectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, knobs.ConnectTimeout)
		defer cancel()
	}
	ctl, err := control.Dial(ctx, job.ControlAddr, job.Key, job.Rank, job.Size, ctlLog)
	if err != nil {
		return nil, fail(fmt.Errorf("connect to the control plane at %s: %w", job.ControlAddr, err))
	}
	ip, err := dataIP(job, knobs, log)
	if err != nil {
		ctl.Close()
		return nil, fail(err)
	}
	facts, err := topo.Gather(job.Rank)
	if err != nil {
		ctl.Close()
		return nil, fail(err)
	}
	board, err := newSwitchboard(ctx, job, knobs, ip, facts, tf.serverCPUs, ctl, log)
	if err != nil {
		ctl.Close()
		return nil, fail(err)
	}
	links, err := worldSet(board, linkTag(0, 0))
	if err != nil {
		board.close()
		ctl.Close()
		return nil, fail(err)
	}
	// After the rank's own checks (its listeners, /dev/shm's space): the
	// exchange waits for rank 0, and a rank that cannot start must say
	// why, not that a peer that could not start aborted the job.
	if sel, err = agreedSelector(ctx, ctl, job, knobs, hostCPUs(tf.serverCPUs, ""), tf.handoff, log); err != nil {
		links.close()
		ctl.Close()
		return nil, fail(err)
	}
	sel = sel.WithSegmentLimit(segmentLimit(knobs, board.ringBytes))
	warm := job.Size > 1 && !board.lazyRings // warmup.go
	if !known && job.Rank == 0 {
		if layout, err = publishLayout(ctx, links, job.Size, ctl); err != nil {
			links.close()
			ctl.Close()
			return nil, fail(err)
		}
		known = true
	}
	var warming sync.WaitGroup
	if warm && known {
		warming.Go(func() { warmUp(sel, job.Rank, job.Size, layout) }) // while this rank waits for the others
	}
	err = ctl.Barrier(ctx, "init")
	warming.Wait()
	if err != nil {
		links.close()
		ctl.Close()
		return nil, fail(fmt.Errorf("wait for every rank to join: %w", err))
	}
	if !known {
		if layout, err = fetchLayout(ctx, ctl, job.Size); err != nil {
			links.close()
			ctl.Close()
			return nil, fail(err)
		}
	}
	if job.Rank == 0 {
		log.Info("servers", "servers", layout.Servers(), "ranks", layout.String())
	}
	c := &Comm{
		job: job, knobs: knobs, log: log, ctl: ctl, links: links, sel: sel, layout: layout,
		p2pSeq:    make(map[int]uint64),
		watchDone: make(chan struct{}),
		family:    newFamily(job.host.wrap(ctl)),
	}
	c.obs = newObserver(ctx, c) // trace.go
	c.exec = executor.New(job.Rank, links, c.execConfig())
	go c.watchControl()
	if warm {
		if err := c.warmCall(ctx); err != nil {
			c.Close()
			return nil, fail(fmt.Errorf("the first AllReduce: %w", err))
		}
	}
	log.Debug("joined", "size", job.Size, "local_rank", job.LocalRank, "local_size", job.LocalSize, "data_ip", ip)
	return c, nil
}

func resolve(s *settings) (Job, tunables, error) {
	knobs, err := knobsFromEnv(osGetenv)
	if err != nil {
		return Job{}, tunables{}, err
	}
	for _, edit := range s.edits {
		edit(&knobs)
	}
	if err := checkChannelBounds(knobs.MinChannels, knobs.MaxChannels); err != nil {
		return Job{}, tunables{}, err
	}
	var job Job
	if s.job != nil {
		job = *s.job
		if job.Size < 1 || job.Rank < 0 || job.Rank >= job.Size {
			return Job{}, tunables{}, fmt.Errorf("rank %d of %d", job.Rank, job.Size)
		}
		if job.LocalSize == 0 {
			job.LocalRank, job.LocalSize = job.Rank, job.Size
		}
	} else if t, srun, err := pmiFromEnv(osGetenv); srun {
		if err != nil {
			return Job{}, tunables{}, err
		}
		log := s.logger
		if log == nil {
			log = defaultLogger(knobs.Debug)
		}
		if job, err = joinPMI(t, knobs, log); err != nil {
			return Job{}, tunables{}, err
		}
	} else if job, err = jobFromEnv(osGetenv); err != nil {
		return Job{}, tunables{}, err
	}
	return job, knobs, nil
}

// dataIP picks the address to listen on for data links. HCCL_SOCKET_IFNAME
// chooses the interface by name (netio.ChooseInterface). Without it, the
// rank uses the source address the kernel routes from towards the
// launcher: the launcher reaches every rank, so that network is the job's
// (and a job on one host gets loopback). Connecting a UDP socket sends
// nothing.
func dataIP(job Job, knobs tunables, log *slog.Logger) (string, error) {
	if knobs.SocketIfname != "" {
		return chooseIP(knobs, job.LocalSize == job.Size, "data", log)
	}
	c, err := net.Dial("udp", job.ControlAddr)
	if err != nil {
		return "", fmt.Errorf("find the local address towards %s: %w", job.ControlAddr, err)
	}
	defer c.Close()
	ip := c.LocalAddr().(*net.UDPAddr).IP.String()
	dev, _, _ := topo.RouteTo(c.RemoteAddr().(*net.UDPAddr).IP.String())
	log.Info("data interface", "nic", dev, "addr", ip, "why", "the route to the launcher at "+job.ControlAddr+" leaves through it (set HCCL_SOCKET_IFNAME to choose)")
	return ip, nil
}

func defaultLogger(debug string) *slog.Logger {
	level := slog.LevelWarn
	switch debug {
	case "INFO":
		level = slog.LevelInfo
	case "TRACE":
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// Rank is this process's rank in the job, 0 <= Rank() < Size().
func (c *Comm) Rank() int { return c.job.Rank }

// Size is the number of ranks in the job.
func (c *Comm) Size() int { return c.job.Size }

// LocalRank is this process's rank among the ranks of its server.
func (c *Comm) LocalRank() int { return c.job.LocalRank }

// LocalSize is the number of ranks on this process's server.
func (c *Comm) LocalSize() int { return c.job.LocalSize }

// watchControl turns an abort or the loss of the launcher into the
// communicator's failure: links close, blocked collectives return.
func (c *Comm) watchControl() {
	defer close(c.watchDone)
	select {
	case <-c.ctl.Done():
	case <-c.stop: // closed; the connection may serve other communicators
		return
	}
	if c.closed.Load() {
		return
	}
	err := c.ctl.Err()
	var abort *control.AbortError
	if errors.As(err, &abort) {
		// Reasons from ranks start with the rank ("rank 3: ..."); only
		// say who aborted when the reason does not.
		who := "the launcher"
		if abort.Rank >= 0 {
			who = fmt.Sprintf("rank %d", abort.Rank)
		}
		if strings.HasPrefix(abort.Reason, who) {
			c.markBroken(fmt.Errorf("%w: %s", ErrAborted, abort.Reason))
		} else {
			c.markBroken(fmt.Errorf("%w by %s: %s", ErrAborted, who, abort.Reason))
		}
	} else {
		c.markBroken(fmt.Errorf("%w: lost the control plane%s: %w", ErrAborted, c.job.controlBy, err))
	}
	// Shut, not close: a collective may be running on the links.
	c.shutLinks()
}

// markBroken records the first reason the communicator became unusable.
func (c *Comm) markBroken(err error) {
	c.broken.CompareAndSwap(nil, &err)
}

func (c *Comm) brokenErr() error {
	if p := c.broken.Load(); p != nil {
		return *p
	}
	return nil
}

// Abort aborts the job, as NCCL's ncclCommAbort does, for a program that
// handles a failure itself (a peer it gave up on, an input it cannot use)
// and must not leave the other ranks waiting for this one. Every rank's
// running and later calls fail with ErrAborted naming this rank and
// reason; on this rank the error also wraps reason (errors.Is, errors.As).
// Abort does not wait for a running call, whose blocked transfers fail at
// once. Close still leaves the job and releases the communicator. Abort
// may be called from any goroutine, more than once (the first reason
// stays), and after Close, where it does nothing.
func (c *Comm) Abort(reason error) {
	if c.closed.Load() {
		return
	}
	if reason == nil {
		reason = errors.New("no reason given")
	}
	c.abort(fmt.Errorf("%w: %s called Abort: %w", ErrAborted, c.whoAmI(), reason),
		fmt.Sprintf("%s called Abort: %v", c.whoAmI(), reason))
}

// abortJob tells every rank that this one failed, so that none waits for
// it. The failure is kept as text: the calls after it fail because of the
// abort, not with the failed call's kind (ErrMismatch, ErrTimeout).
func (c *Comm) abortJob(reason error) {
	c.abort(fmt.Errorf("%w: %v", ErrAborted, reason), fmt.Sprintf("%s: %v", c.whoAmI(), reason))
}

// abort records err as the communicator's failure, broadcasts reason
// through the control plane's abort (every rank's watchControl records
// it) and shuts this rank's links, so that its blocked calls fail.
func (c *Comm) abort(err error, reason string) {
	c.markBroken(err)
	if err := c.ctl.Abort(reason); err != nil {
		c.log.Warn("could not broadcast the abort", "err", err)
	}
	c.shutLinks()
}

// Close closes the communicator's data links; the last of the rank's
// communicators to close (its sub-communicators count, Split) leaves the
// job and closes the control connection. Later calls fail with ErrClosed.
func (c *Comm) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.stop)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.closeObserver() // trace.go: while the links and the control plane are open
		err = errors.Join(c.closeChannels(), c.links.close(), c.shared.release())
		<-c.watchDone
		c.exec.Close()
	})
	return err
}

// segmentBytes is the executor's pipelining unit for links whose rings
// hold ringBytes when HCCL_BUFFSIZE asked for buffSize (0: the default): a
// quarter of the ring, so that the sender fills the next segments while
// the receiver drains the first instead of taking turns; the executor's
// default for the default ring.
func segmentBytes(buffSize, ringBytes int) int {
	if buffSize <= 0 && ringBytes >= shmlink.DefaultRingBytes {
		return 0 // the executor's default
	}
	seg := max(ringBytes/4, 1024)
	if buffSize <= 0 {
		seg = min(seg, executor.DefaultSegmentBytes)
	}
	return seg
}
