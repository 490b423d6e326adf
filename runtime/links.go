package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hcclrun/hcclrun/internal/cpu"
	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio"
	"github.com/hcclrun/hcclrun/ranktable"
	"github.com/hcclrun/hcclrun/runtime/executor"
	"github.com/hcclrun/hcclrun/runtime/topo"
	"github.com/hcclrun/hcclrun/runtime/transport"
	"github.com/hcclrun/hcclrun/runtime/transport/shmlink"
	"github.com/hcclrun/hcclrun/runtime/transport/tcplink"
	"github.com/hcclrun/hcclrun/shm"
)

// linkManager opens the data links of a rank lazily, the first time the
// executor needs a peer. Of two ranks, the higher one dials and the lower
// one accepts, so both sides agree on one connection without talking first.
//
// Transports are tried in order, as NCCL does: shared memory when the
// peer's topology facts say it shares this rank's host (and HCCL_SHM_DISABLE
// is not set), then TCP. The lower rank listens on both and takes whatever
// arrives. Endpoints and facts are published on the control plane under
// dataKey(rank) and factsKey(rank), the name of the rank's shared-memory
// socket with its facts (published): the name is random, so that another
// local user cannot take it first, and only the job's ranks learn it.
type linkManager struct {
	rank, size int
	jobID      string
	key        []byte
	ctl        controlPlane
	tcp        *netio.Listener
	// shmOn says that this rank links to the ranks of its host over
	// shared memory; shm is its listener, nil when shared memory is off
	// or its socket name was taken (the higher ranks then dial TCP).
	shmOn     bool
	shm       *shmlink.Listener
	ringBytes int
	// lazyRings leaves the pages of the links' segments to fault in at
	// first touch: where the rings were shrunk, or the ranks outnumber the
	// CPUs lazyCrowd times over, a rank opens links that carry little (a
	// Barrier's), and reading them all ahead was most of its CPU time,
	// which on shared cores is its peers' too.
	lazyRings bool
	// shmFallbacks counts the links to ranks of this host that went over
	// TCP because shared memory failed.
	shmFallbacks atomic.Int32
	noDirect     bool                // HCCL_SHM_DIRECT=0: the shm links do not probe for in-place reads
	pipeBytes    int                 // asked of each pipe of an shm link (shmlink.PipeBytes)
	noPipes      bool                // in-place reads without pipes (pipesOff)
	dataOpts     netio.SocketOptions // of the TCP data links (congestion.go)
	facts        topo.Facts          // this rank's
	log          *slog.Logger
	poll         executor.Poll // how the executor waits for several small receives, from the wait policy

	mu    sync.Mutex
	links map[int]transport.Link
	// open is links indexed by peer, for the executor's two lookups per
	// op without the lock (whose lock and unlock were 7% of an 8-byte
	// AllReduce's profile): set under mu as links open, ignored once the
	// manager stops.
	open       []atomic.Pointer[openLink]
	stopped    atomic.Bool
	arrived    map[int]chan struct{} // closed when a link from that (higher) peer is accepted
	dialing    map[int]*pendingDial
	peerFacts  map[int]published
	closed     bool
	done       chan struct{} // closed by close
	acceptDone sync.WaitGroup
}

func dataKey(rank int) string  { return "data/" + strconv.Itoa(rank) }
func factsKey(rank int) string { return "topo/" + strconv.Itoa(rank) }

// published is what a rank puts under factsKey: its topology facts and
// the name of its shared-memory socket, "" when it has none (shared
// memory off, or the name taken), which tells the higher ranks of its
// host to dial TCP at once.
type published struct {
	topo.Facts
	ShmAddr string `json:"shm_addr,omitempty"`
}

// newLinkManager listens for data links on ip (and on the shared-memory
// socket), and publishes the endpoint and the rank's facts. serverCPUs is
// how many CPUs the ranks of this server are bound to together, 0 when
// they are not bound (tableFacts).
func newLinkManager(ctx context.Context, job Job, knobs tunables, ip string, facts topo.Facts, serverCPUs int, ctl controlPlane, log *slog.Logger) (*linkManager, error) {
	congestion, err := congestionFor(knobs, log)
	if err != nil {
		return nil, err
	}
	ring := ringBytesFor(knobs.BuffSize, job.LocalSize)
	me := wire.Hello{Purpose: wire.PurposeData, Rank: uint32(job.Rank)}
	tcp, err := netio.Listen(net.JoinHostPort(ip, "0"), job.Key, me, log)
	if err != nil {
		return nil, fmt.Errorf("listen for data links on %s: %w", ip, err)
	}
	m := &linkManager{
		rank: job.Rank, size: job.Size, jobID: job.JobID, key: job.Key, ctl: ctl, tcp: tcp, log: log,
		ringBytes: ring,
		lazyRings: ring < shmlink.HostRingBytes(knobs.BuffSize, 2) || job.LocalSize > lazyCrowd*hostCPUs(serverCPUs, facts.CPUs),
		noDirect:  knobs.shmDirect() == directNone, facts: facts,
		pipeBytes: shmlink.PipeBytes(job.LocalSize), noPipes: pipesOff(knobs, job.LocalSize, job.LocalSize > yieldCrowd*hostCPUs(serverCPUs, facts.CPUs), log),
		dataOpts:  netio.SocketOptions{Congestion: congestion},
		links:     make(map[int]transport.Link),
		open:      make([]atomic.Pointer[openLink], job.Size),
		arrived:   make(map[int]chan struct{}),
		dialing:   make(map[int]*pendingDial),
		peerFacts: make(map[int]published),
		done:      make(chan struct{}),
	}
	spin, yield, wake := waitPolicy(job.LocalSize, serverCPUs, facts.CPUs)
	tcplink.SetSpin(spin)
	if !knobs.ShmDisable && job.Size > 1 {
		if err := checkShmSpace(job.LocalSize, m.ringBytes); err != nil {
			tcp.Close()
			return nil, err
		}
		shm.SetSpin(spin)
		shm.SetYield(yield)
		shm.SetWakePeriod(wake)
		shmlink.SetShare(spin > 0) // a core for each rank: see SetShare
		m.poll = executor.Poll{Spin: spin, Yield: yield, Relax: cpu.Pause, YieldProcessor: shm.Yield}
		m.shmOn = true
		m.shm, err = shmlink.ListenConfig{Tag: knobs.ShmSocketTag}.Listen(job.JobID, job.Rank, job.Key, log)
		switch {
		case errors.Is(err, shmlink.ErrNameTaken):
			// Only a process that knew the tag can have taken the name:
			// it must not stop the job, which reaches this rank over TCP.
			log.Warn("the shared-memory socket name is taken by another process; the ranks of this host reach this rank over TCP", "err", err)
		case err != nil:
			tcp.Close()
			return nil, fmt.Errorf("listen for shared-memory links: %w", err)
		}
	}
	m.facts.DataIP = ip
	pub := published{Facts: m.facts}
	if m.shm != nil {
		pub.ShmAddr = m.shm.Addr()
	}
	blob, err := json.Marshal(pub)
	if err != nil {
		m.close()
		return nil, err
	}
	if err := ctl.Put(ctx, factsKey(job.Rank), blob); err != nil {
		m.close()
		return nil, fmt.Errorf("publish topology facts: %w", err)
	}
	if err := ctl.Put(ctx, dataKey(job.Rank), []byte(tcp.Addr().String())); err != nil {
		m.close()
		return nil, fmt.Errorf("publish data endpoint: %w", err)
	}
	m.acceptDone.Add(1)
	go m.acceptTCP()
	if m.shm != nil {
		m.acceptDone.Add(1)
		go m.acceptShm()
	}
	return m, nil
}

func (m *linkManager) arrival(peer int) chan struct{} {
	ch, ok := m.arrived[peer]
	if !ok {
		ch = make(chan struct{})
		m.arrived[peer] = ch
	}
	return ch
}

// deliver registers a link accepted from peer, or refuses it.
func (m *linkManager) deliver(peer int, l transport.Link, via string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if peer <= m.rank || peer >= m.size || m.closed || m.links[peer] != nil {
		m.log.Warn("dropping unexpected data link", "peer", peer, "via", via)
		l.Close()
		return
	}
	m.addLink(peer, l)
	close(m.arrival(peer))
	m.log.Debug("link accepted", "peer", peer, "via", via)
}

func (m *linkManager) acceptTCP() {
	defer m.acceptDone.Done()
	for {
		conn, hello, err := m.tcp.Accept()
		if err != nil {
			return // closed
		}
		if hello.Purpose != wire.PurposeData || hello.Rank == wire.LauncherRank {
			m.log.Warn("dropping a connection that is not a data link", "hello", hello.String(), "remote", conn.RemoteAddr().String())
			conn.Close()
			continue
		}
		m.tuneData(conn, int(hello.Rank))
		m.deliver(int(hello.Rank), tcplink.New(conn, int(hello.Rank)), "tcp")
	}
}

func (m *linkManager) acceptShm() {
	defer m.acceptDone.Done()
	for {
		l, peer, err := m.shm.Accept(context.Background())
		if err != nil {
			return // closed
		}
		m.deliver(peer, l, "shm")
	}
}

// Link returns the link to peer, opening it if needed. Safe for concurrent
// use.
func (m *linkManager) Link(ctx context.Context, peer int) (transport.Link, error) {
	if l := m.opened(peer); l != nil {
		return l, nil
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if l := m.links[peer]; l != nil {
		m.mu.Unlock()
		return l, nil
	}
	if peer > m.rank {
		ch := m.arrival(peer)
		m.mu.Unlock()
		select {
		case <-ch:
		case <-m.done:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for rank %d to connect: %w", peer, ctx.Err())
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.closed {
			return nil, ErrClosed
		}
		return m.links[peer], nil
	}
	// This rank dials. The ops of a step run concurrently and may ask for
	// the same peer at once (a send and a receive): one dials, the others
	// wait for its result, so that both ends agree on a single link.
	if d, ok := m.dialing[peer]; ok {
		m.mu.Unlock()
		select {
		case <-d.done:
			return d.link, d.err
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the link to rank %d: %w", peer, ctx.Err())
		}
	}
	d := &pendingDial{done: make(chan struct{})}
	m.dialing[peer] = d
	m.mu.Unlock()
	l, err := m.dialUntilClosed(ctx, peer)
	m.mu.Lock()
	delete(m.dialing, peer)
	switch {
	case err != nil:
	case m.closed:
		l.Close()
		l, err = nil, ErrClosed
	default:
		m.addLink(peer, l)
	}
	m.mu.Unlock()
	d.link, d.err = l, err
	close(d.done)
	return l, err
}

// dialUntilClosed dials peer, giving up when the manager closes: an abort
// of the job closes it, and a rank dialling a peer that has died (its
// listener gone, so every attempt is refused) must then fail at once with
// the abort rather than retry until ctx ends (seen in CI: a rank reported
// 20 s of refused dials to a peer of a job that another rank had aborted).
func (m *linkManager) dialUntilClosed(ctx context.Context, peer int) (transport.Link, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-m.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	l, err := m.dial(ctx, peer)
	if err != nil {
		select {
		case <-m.done:
			return nil, ErrClosed
		default:
		}
	}
	return l, err
}

// pendingDial is a dial in progress that other callers wait for.
type pendingDial struct {
	done chan struct{}
	link transport.Link
	err  error
}

// Open returns the link to peer if it is open, without waiting.
func (m *linkManager) Open(peer int) transport.Link {
	if l := m.opened(peer); l != nil {
		return l
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.links[peer]
}

// openLink boxes a link for linkManager.open.
type openLink struct{ transport.Link }

// opened returns the open link to peer without the lock, nil when there is
// none (or the manager stopped).
func (m *linkManager) opened(peer int) transport.Link {
	if peer < 0 || peer >= len(m.open) || m.stopped.Load() {
		return nil
	}
	if o := m.open[peer].Load(); o != nil {
		return o.Link
	}
	return nil
}

// warmShm reads every page of every open shared-memory link
// (shmlink.Link.Warm), so that calls timed from now on time the rings as
// they will stay (posttune.go).
func (m *linkManager) warmShm() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.links {
		if s, ok := l.(*shmlink.Link); ok {
			s.Warm()
		}
	}
}

// addLink records the link to peer; m.mu must be held.
func (m *linkManager) addLink(peer int, l transport.Link) {
	m.links[peer] = l
	m.open[peer].Store(&openLink{l})
}

// PeerFacts returns the topology facts peer published, waiting for them.
func (m *linkManager) PeerFacts(ctx context.Context, peer int) (topo.Facts, error) {
	if peer == m.rank {
		return m.facts, nil
	}
	p, err := m.peerPublished(ctx, peer)
	return p.Facts, err
}

// peerPublished returns what peer published under factsKey, waiting for it.
func (m *linkManager) peerPublished(ctx context.Context, peer int) (published, error) {
	m.mu.Lock()
	p, ok := m.peerFacts[peer]
	m.mu.Unlock()
	if ok {
		return p, nil
	}
	blob, err := m.ctl.Get(ctx, factsKey(peer))
	if err != nil {
		return published{}, fmt.Errorf("look up the topology facts of rank %d: %w", peer, err)
	}
	if err := json.Unmarshal(blob, &p); err != nil {
		return published{}, fmt.Errorf("topology facts of rank %d: %w", peer, err)
	}
	m.mu.Lock()
	m.peerFacts[peer] = p
	m.mu.Unlock()
	return p, nil
}

// dial opens a link to the lower rank peer: shared memory when it shares
// this rank's host, else (or when that fails) TCP.
func (m *linkManager) dial(ctx context.Context, peer int) (transport.Link, error) {
	if m.shmOn {
		p, err := m.peerPublished(ctx, peer)
		if err != nil {
			return nil, err
		}
		switch {
		case !topo.SameHost(m.facts, p.Facts):
		case p.ShmAddr == "":
			// The peer said so itself (and warned, if it had to).
			m.log.Debug("the rank has no shared-memory socket, using TCP", "peer", peer)
		default:
			l, err := shmlink.Dial(ctx, shmlink.DialConfig{JobID: m.jobID, Addr: p.ShmAddr, Key: m.key, Self: m.rank, Peer: peer, RingBytes: m.ringBytes, NoDirect: m.noDirect, PipeBytes: m.pipeBytes, NoPipes: m.noPipes, Segment: shm.Options{Lazy: m.lazyRings}})
			if err == nil {
				m.log.Debug("link dialled", "peer", peer, "via", "shm", "reads_in_place", l.ReadsDirect())
				return l, nil
			}
			if ctx.Err() != nil {
				return nil, err
			}
			// The first fallback is worth a warning; the next ones
			// (a full /dev/shm fails every link after it) only repeat it.
			if m.shmFallbacks.Add(1) == 1 {
				m.log.Warn("shared memory to a rank of this host failed, using TCP (later links that fall back are logged at TRACE)", "peer", peer, "err", err)
			} else {
				m.log.Debug("shared memory to a rank of this host failed, using TCP", "peer", peer, "err", err)
			}
		}
	}
	addr, err := m.ctl.Get(ctx, dataKey(peer))
	if err != nil {
		return nil, fmt.Errorf("look up the data endpoint of rank %d: %w", peer, err)
	}
	me := wire.Hello{Purpose: wire.PurposeData, Rank: uint32(m.rank)}
	conn, hello, err := netio.Dial(ctx, string(addr), m.key, me)
	if err != nil {
		return nil, fmt.Errorf("connect to rank %d at %s: %w", peer, addr, err)
	}
	if hello.Purpose != wire.PurposeData || int(hello.Rank) != peer {
		conn.Close()
		return nil, fmt.Errorf("connect to rank %d at %s: answered by %s", peer, addr, hello)
	}
	m.tuneData(conn, peer)
	m.log.Debug("link dialled", "peer", peer, "via", "tcp", "addr", string(addr))
	return tcplink.New(conn, peer), nil
}

// close closes the listeners and every link, releasing the links' memory:
// no collective may be running on them (an abort shuts them first, which
// makes blocked calls fail).
func (m *linkManager) close() error { return m.stop(true) }

// shut makes every call on the links fail, for an abort: ops of the
// executor may be blocked in them, waiting for peers that will never send.
// The links keep their memory (shmlink.Link.Shut) until close, which the
// communicator calls only when no collective is running.
func (m *linkManager) shut() { m.stop(false) }

// stop shuts the manager down: no link opens any more, and every link
// fails its calls; with release, the links are closed too.
func (m *linkManager) stop(release bool) error {
	m.mu.Lock()
	first := !m.closed
	if first {
		m.closed = true
		m.stopped.Store(true)
		close(m.done)
	}
	links := m.links
	if release {
		m.links = nil
	}
	m.mu.Unlock()
	var errs []error
	if first {
		errs = append(errs, m.tcp.Close())
		if m.shm != nil {
			errs = append(errs, m.shm.Close())
		}
	}
	for _, l := range links {
		if release {
			errs = append(errs, l.Close())
		} else {
			l.Shut()
		}
	}
	m.acceptDone.Wait()
	return errors.Join(errs...)
}

// lazyCrowd is how many ranks per CPU a host has beyond which its links'
// pages fault in at first touch (linkManager.lazyRings). Up to it (np 4 on
// 2 CPUs, where the calibrations ran) they are read ahead as before.
const lazyCrowd = 2

// ringBytesFor is the ring of each shm link of a host of localSize ranks
// when HCCL_BUFFSIZE asks for buffSize: shrunk on a crowded host
// (shmlink.HostRingBytes) and to let a full mesh fit in half of what
// /dev/shm has free (shmlink.FitRingBytes).
func ringBytesFor(buffSize, localSize int) int {
	ring := shmlink.HostRingBytes(buffSize, localSize)
	if free, err := shm.StatfsFree(shm.DefaultDir); err == nil {
		ring = shmlink.FitRingBytes(ring, localSize, free)
	}
	return ring
}

// checkShmSpace fails Init with an actionable message when /dev/shm cannot
// hold the segments of the two links every collective of a host of
// localSize ranks opens first (a ring's neighbours), instead of failing in
// the middle of one. Links open on first use, and a link whose segment
// does not fit then goes over TCP with a warning (dial), so Init asks for
// no more than that.
func checkShmSpace(localSize, ringBytes int) error {
	if localSize < 2 {
		return nil
	}
	seg, err := shmlink.SegmentBytes(ringBytes)
	if err != nil {
		return fmt.Errorf("HCCL_BUFFSIZE: %w", err)
	}
	return shm.CheckSpace(shm.DefaultDir, uint64(min(localSize-1, 2))*uint64(seg), nil)
}

// hostCPUs is how many CPUs the ranks of this rank's server share:
// serverCPUs when the launcher bound the ranks (the rank table's CPUs of
// the server; each rank's own affinity is then its share only), else what
// this rank may use (cpuList, its affinity, or runtime.NumCPU, which
// honours it), as the ranks of an unbound host share it.
func hostCPUs(serverCPUs int, cpuList string) int {
	if serverCPUs > 0 {
		return serverCPUs
	}
	if list, err := ranktable.ParseCPUList(cpuList); err == nil && len(list) > 0 {
		return len(list)
	}
	return goruntime.NumCPU()
}

// waitPolicy says how a rank waiting on shared memory polls before it
// sleeps (docs/performance.md, "Waiting"). With a CPU for every rank of the
// host it spins for 200 us: a sleep costs tens of microseconds of wake-up
// latency. On an oversubscribed host a spinning rank would steal the core
// its peer needs, so it does not spin and yields the processor between
// checks for 100 us instead: the peer it waits for is often next in line
// for this core. Beyond yieldCrowd ranks per CPU it goes to sleep at once,
// and sleeps up to shm.CrowdWakePeriod between looks: there the yielders
// outnumber the ranks at work, each yield handing the core to another
// yielder rather than to a worker, and the periodic wakes of hundreds of
// sleepers cost the workers their CPU. wake is the sleepers' period
// (shm.SetWakePeriod). The host's CPUs are hostCPUs'.
func waitPolicy(localSize, serverCPUs int, cpuList string) (spin, yield, wake time.Duration) {
	cpus := hostCPUs(serverCPUs, cpuList)
	switch {
	case localSize <= cpus:
		return 200 * time.Microsecond, 0, shm.WakePeriod
	case localSize > yieldCrowd*cpus:
		return 0, 0, shm.CrowdWakePeriod
	}
	return 0, 100 * time.Microsecond, shm.WakePeriod
}

// yieldCrowd is how many ranks per CPU a host may have for its waiters to
// yield (waitPolicy); where the crossover lies was measured
// (docs/performance.md, "Waiting").
const yieldCrowd = 8
