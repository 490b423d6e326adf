package control

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio"
)

// Defaults of ServerConfig's liveness knobs. Half a second of heartbeat
// costs nothing. Ten seconds of silence outlasts the pauses of a healthy
// rank on an oversubscribed host (64 ranks on 2 cores: its beat loop may
// not run for seconds), and costs only frozen or cut-off peers: a process
// that dies closes its socket, which is noticed at once.
const (
	DefaultHeartbeatInterval = 500 * time.Millisecond
	DefaultLostAfter         = 10 * time.Second
)

// sendQueue is how many messages may wait for one slow rank before the
// server gives up on it (a rank that reads nothing while its socket
// buffer fills is as good as lost).
const sendQueue = 1024

// ServerConfig configures a Server.
type ServerConfig struct {
	// Listener to serve on, or nil to listen on Addr (e.g. "0.0.0.0:0").
	// A given Listener must present PurposeControl; the server owns it.
	Listener *netio.Listener
	Addr     string
	Key      []byte // the job key (used only with Addr)
	Size     int    // number of ranks in the job
	Log      *slog.Logger
	// HeartbeatInterval and LostAfter apply to both directions: the
	// server tells each client its values when it admits it. Zero means
	// the default.
	// A side is lost after LostAfter of silence plus one
	// HeartbeatInterval: a reader that finds its deadline passed looks at
	// the socket once more before it believes it (patient.go).
	HeartbeatInterval time.Duration
	LostAfter         time.Duration
	// AbortOnLost makes the server abort the job (origin: the lost rank)
	// as soon as a rank is lost, without waiting for the launcher.
	AbortOnLost bool

	// wrap, when set by a test, wraps every accepted connection.
	wrap func(net.Conn) net.Conn
}

// Server is the control service of one job. Its methods are safe for
// concurrent use.
type Server struct {
	cfg    ServerConfig
	ln     *netio.Listener
	log    *slog.Logger
	events *eventQueue

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	start time.Time      // SilentFor of a rank is measured from here
	live  []rankLiveness // by rank; written without mu by the read loops

	mu       sync.Mutex
	ranks    []*rankConn // connected ranks, by rank
	state    []RankState // by rank; a rank joins once, so only NotJoined ranks are admitted
	kv       map[string][]byte
	waiters  map[string][]waiter
	barriers map[string]map[int]uint64 // name -> rank -> request id
	aborted  *AbortError
}

type waiter struct {
	rc *rankConn
	id uint64
}

// NewServer validates cfg and starts listening (connections are accepted
// and authenticated from now on, and admitted once Serve runs).
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Size <= 0 || uint64(cfg.Size) >= uint64(wire.LauncherRank) {
		return nil, fmt.Errorf("control: server: job size %d", cfg.Size)
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.LostAfter <= 0 {
		cfg.LostAfter = DefaultLostAfter
	}
	if cfg.LostAfter <= cfg.HeartbeatInterval {
		return nil, fmt.Errorf("control: server: LostAfter %v must exceed HeartbeatInterval %v", cfg.LostAfter, cfg.HeartbeatInterval)
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln := cfg.Listener
	if ln == nil {
		var err error
		ln, err = netio.Listen(cfg.Addr, cfg.Key, wire.Hello{Purpose: wire.PurposeControl, Rank: wire.LauncherRank}, log)
		if err != nil {
			return nil, fmt.Errorf("control: server: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		cfg:      cfg,
		ln:       ln,
		log:      log,
		events:   newEventQueue(),
		ctx:      ctx,
		cancel:   cancel,
		start:    time.Now(),
		live:     make([]rankLiveness, cfg.Size),
		ranks:    make([]*rankConn, cfg.Size),
		state:    make([]RankState, cfg.Size),
		kv:       map[string][]byte{},
		waiters:  map[string][]waiter{},
		barriers: map[string]map[int]uint64{},
	}, nil
}

// Addr returns the address ranks should dial (HCCL_CONTROL_ADDR). When
// listening on a wildcard address, the caller substitutes a routable host.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Events delivers what happens to the ranks, in order. It is closed by
// Close; events not received by then are discarded. Not reading it never
// slows the server down.
func (s *Server) Events() <-chan Event { return s.events.out }

// Serve admits ranks until ctx ends or Close is called, then closes the
// server. It returns nil then, or the listener's error.
func (s *Server) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	for {
		conn, hello, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			s.Close()
			return fmt.Errorf("control: serve: %w", err)
		}
		// Under mu, so that Close (which cancels, then takes mu, then
		// waits) never sees a goroutine added behind its Wait.
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			conn.Close()
			return nil
		}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(conn, hello)
	}
}

// Close stops the server: the listener closes, every rank's connection
// closes (the ranks see ErrLost), Events closes. It waits for the
// server's goroutines.
func (s *Server) Close() error {
	s.cancel()
	err := s.ln.Close()
	s.mu.Lock()
	for _, rc := range s.ranks {
		if rc != nil {
			rc.kill(nil)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.events.close()
	return err
}

// Abort ends the job: every connected rank, and every rank that connects
// later, receives an AbortError{Rank: origin, Reason: reason}. origin is
// the rank that failed, or LauncherOrigin. Only the first abort is
// broadcast; later ones are logged.
func (s *Server) Abort(origin int, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.abortLocked(origin, reason)
}

func (s *Server) abortLocked(origin int, reason string) {
	if s.aborted != nil {
		s.log.Info("control: abort after abort ignored", "origin", origin, "reason", reason, "first", s.aborted.Error())
		return
	}
	s.aborted = &AbortError{Rank: origin, Reason: reason}
	s.log.Warn("control: job aborted", "origin", origin, "reason", reason)
	ab := &msg{Type: tAbort, Origin: int32(origin), Text: reason}
	for _, rc := range s.ranks {
		if rc != nil {
			rc.send(ab)
		}
	}
	// Nobody will answer what is still waiting: say so, so that the
	// server holds no state for a dead job.
	for key, ws := range s.waiters {
		for _, w := range ws {
			w.rc.send(&msg{Type: tReply, ID: w.id, Code: codeAborted, Text: reason})
		}
		delete(s.waiters, key)
	}
	for name, b := range s.barriers {
		for r, id := range b {
			if rc := s.ranks[r]; rc != nil {
				rc.send(&msg{Type: tReply, ID: id, Code: codeAborted, Text: reason})
			}
		}
		delete(s.barriers, name)
	}
}

// rankConn is the server's side of one admitted rank.
type rankConn struct {
	rank int
	conn net.Conn
	out  chan []byte
	dead chan struct{}
	once sync.Once
	err  error // why the connection died; nil when the server closed it
}

// kill closes the connection once; the first reason sticks.
func (rc *rankConn) kill(err error) {
	rc.once.Do(func() {
		rc.err = err
		close(rc.dead)
		rc.conn.Close()
	})
}

// send queues m without blocking; a rank whose queue is full is lost.
func (rc *rankConn) send(m *msg) {
	b, err := appendMsg(nil, m)
	if err != nil {
		rc.kill(fmt.Errorf("control: encode for rank %d: %w", rc.rank, err))
		return
	}
	select {
	case rc.out <- b:
	case <-rc.dead:
	default:
		rc.kill(fmt.Errorf("control: rank %d reads nothing: %d messages queued", rc.rank, sendQueue))
	}
}

// writeLoop sends queued messages and heartbeats. A write that takes
// LostAfter kills the connection.
func (s *Server) writeLoop(rc *rankConn) {
	defer s.wg.Done()
	ping, _ := appendMsg(nil, &msg{Type: tPing})
	t := time.NewTicker(s.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		var b []byte
		select {
		case b = <-rc.out:
		case <-t.C:
			b = ping
		case <-rc.dead:
			return
		}
		rc.conn.SetWriteDeadline(time.Now().Add(s.cfg.LostAfter))
		if _, err := rc.conn.Write(b); err != nil {
			rc.kill(fmt.Errorf("control: write to rank %d: %w", rc.rank, err))
			return
		}
	}
}

// serveConn admits one authenticated connection and serves it until it
// ends.
func (s *Server) serveConn(conn net.Conn, hello wire.Hello) {
	defer s.wg.Done()
	if s.cfg.wrap != nil {
		conn = s.cfg.wrap(conn)
	}
	// Close ends this connection whatever phase it is in.
	stop := context.AfterFunc(s.ctx, func() { conn.Close() })
	defer stop()
	remote := conn.RemoteAddr().String()
	pr := &patientReader{conn: conn, wait: s.cfg.LostAfter, grace: s.cfg.HeartbeatInterval}
	r := bufio.NewReader(pr)
	refuse := func(why string) {
		s.log.Warn("control: refused connection", "remote", remote, "hello", hello.String(), "why", why)
		b, _ := appendMsg(nil, &msg{Type: tRefuse, Text: why})
		conn.SetWriteDeadline(time.Now().Add(s.cfg.LostAfter))
		conn.Write(b)
		conn.Close()
	}
	if hello.Purpose != wire.PurposeControl {
		refuse(fmt.Sprintf("a %v connection on the control port", hello.Purpose))
		return
	}
	m, err := readMsg(r)
	if err != nil || m.Type != tJoin {
		refuse(fmt.Sprintf("no join message (%v)", err))
		return
	}
	rank := int(hello.Rank)
	s.mu.Lock()
	var why string
	switch {
	case hello.Rank >= uint32(s.cfg.Size):
		why = fmt.Sprintf("rank %d out of range for a job of %d ranks", hello.Rank, s.cfg.Size)
	case int(m.Size) != s.cfg.Size:
		why = fmt.Sprintf("rank %d thinks the job has %d ranks, it has %d", rank, m.Size, s.cfg.Size)
	case s.state[rank] != NotJoined:
		why = fmt.Sprintf("rank %d has already joined this job", rank)
	case s.ctx.Err() != nil:
		why = "server closing"
	}
	if why != "" {
		s.mu.Unlock()
		refuse(why)
		return
	}
	rc := &rankConn{rank: rank, conn: conn, out: make(chan []byte, sendQueue), dead: make(chan struct{})}
	s.ranks[rank] = rc
	s.state[rank] = Alive
	s.touch(rank)
	rc.send(&msg{Type: tWelcome,
		Heartbeat: millis(s.cfg.HeartbeatInterval.Milliseconds()),
		LostAfter: millis(s.cfg.LostAfter.Milliseconds())})
	if s.aborted != nil {
		rc.send(&msg{Type: tAbort, Origin: int32(s.aborted.Rank), Text: s.aborted.Reason})
	}
	s.mu.Unlock()
	s.log.Debug("control: rank joined", "rank", rank, "remote", remote)
	s.events.push(RankJoined{Rank: rank})
	s.wg.Add(1)
	go s.writeLoop(rc)

	left := false
	for !left {
		m, err := readMsg(r)
		if err != nil {
			if isTimeout(err) {
				err = fmt.Errorf("no heartbeat for %v", pr.silence())
			}
			rc.kill(fmt.Errorf("control: rank %d (%s): %w", rank, remote, err))
			break
		}
		s.touch(rank)
		if m.Type == tPing {
			// The common message takes no lock: liveness is atomic.
			s.live[rank].progress.store(m.Seq, m.InCall)
			s.live[rank].where.Store(m.Where)
			continue
		}
		if m.Type == tClock {
			// Read the clock as late as possible, and without the lock:
			// its wait would widen the rank's error bar.
			rc.send(&msg{Type: tReply, ID: m.ID, Code: codeOK, Value: binary.LittleEndian.AppendUint64(nil, uint64(time.Now().UnixNano()))})
			continue
		}
		left = s.handle(rc, &m)
	}
	<-rc.dead
	s.mu.Lock()
	s.ranks[rank] = nil
	if left {
		s.state[rank] = Left
	} else {
		s.state[rank] = Lost
	}
	s.dropPendingLocked(rc)
	closing := s.ctx.Err() != nil
	if !left && !closing && s.cfg.AbortOnLost {
		s.abortLocked(rank, fmt.Sprintf("rank %d lost: %v", rank, rc.err))
	}
	s.mu.Unlock()
	switch {
	case left:
		s.log.Debug("control: rank left", "rank", rank)
		s.events.push(RankLeft{Rank: rank})
	case !closing:
		s.log.Warn("control: rank lost", "rank", rank, "remote", remote, "err", rc.err)
		s.events.push(RankLost{Rank: rank, Err: rc.err})
	}
}

// handle acts on one message from rc and reports whether rc left.
func (s *Server) handle(rc *rankConn, m *msg) (left bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m.Type {
	case tStatus:
		s.live[rc.rank].progress.store(m.Seq, m.InCall)
		rc.send(&msg{Type: tStatusReply, ID: m.ID, Ranks: s.statusLocked()})
	case tPut:
		v := append([]byte(nil), m.Value...)
		s.kv[m.Key] = v
		for _, w := range s.waiters[m.Key] {
			w.rc.send(&msg{Type: tReply, ID: w.id, Code: codeOK, Value: v})
		}
		delete(s.waiters, m.Key)
		rc.send(&msg{Type: tReply, ID: m.ID, Code: codeOK})
	case tGet:
		if v, ok := s.kv[m.Key]; ok {
			rc.send(&msg{Type: tReply, ID: m.ID, Code: codeOK, Value: v})
		} else if s.aborted != nil {
			rc.send(&msg{Type: tReply, ID: m.ID, Code: codeAborted, Text: s.aborted.Reason})
		} else {
			s.waiters[m.Key] = append(s.waiters[m.Key], waiter{rc, m.ID})
		}
	case tBarrier:
		if s.aborted != nil {
			rc.send(&msg{Type: tReply, ID: m.ID, Code: codeAborted, Text: s.aborted.Reason})
			break
		}
		b := s.barriers[m.Key]
		if b == nil {
			b = map[int]uint64{}
			s.barriers[m.Key] = b
		}
		if _, dup := b[rc.rank]; dup {
			rc.send(&msg{Type: tReply, ID: m.ID, Code: codeError,
				Text: fmt.Sprintf("rank %d is already waiting in barrier %q", rc.rank, m.Key)})
			break
		}
		b[rc.rank] = m.ID
		if len(b) == s.cfg.Size {
			for r, id := range b {
				if o := s.ranks[r]; o != nil {
					o.send(&msg{Type: tReply, ID: id, Code: codeOK})
				}
			}
			delete(s.barriers, m.Key)
		}
	case tCancel:
		// Answer only a withdrawal: if the request was answered already,
		// that answer is ahead of this one in rc's queue and is the one
		// the client acts on.
		if s.cancelLocked(rc, m.ID) {
			rc.send(&msg{Type: tReply, ID: m.ID, Code: codeCancelled})
		}
	case tAbort:
		reason := m.Text
		s.log.Warn("control: rank aborts the job", "rank", rc.rank, "reason", reason)
		s.events.push(RankAborted{Rank: rc.rank, Reason: reason})
		s.abortLocked(rc.rank, reason)
	case tLeave:
		rc.kill(nil)
		return true
	default:
		rc.kill(fmt.Errorf("control: rank %d sent a message of type %d, which only the server sends", rc.rank, m.Type))
	}
	return false
}

// cancelLocked forgets rc's Get or Barrier with the given id and reports
// whether it was still waiting.
func (s *Server) cancelLocked(rc *rankConn, id uint64) bool {
	for key, ws := range s.waiters {
		for i, w := range ws {
			if w.rc == rc && w.id == id {
				s.waiters[key] = append(ws[:i:i], ws[i+1:]...)
				if len(s.waiters[key]) == 0 {
					delete(s.waiters, key)
				}
				return true
			}
		}
	}
	for name, b := range s.barriers {
		if bid, ok := b[rc.rank]; ok && bid == id {
			delete(b, rc.rank)
			if len(b) == 0 {
				delete(s.barriers, name)
			}
			return true
		}
	}
	return false
}

// dropPendingLocked forgets everything rc was waiting for.
func (s *Server) dropPendingLocked(rc *rankConn) {
	for key, ws := range s.waiters {
		kept := ws[:0]
		for _, w := range ws {
			if w.rc != rc {
				kept = append(kept, w)
			}
		}
		if len(kept) == 0 {
			delete(s.waiters, key)
		} else {
			s.waiters[key] = kept
		}
	}
	for name, b := range s.barriers {
		delete(b, rc.rank)
		if len(b) == 0 {
			delete(s.barriers, name)
		}
	}
}
