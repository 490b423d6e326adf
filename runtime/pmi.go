package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hcclrun/hcclrun/internal/pmi2"
	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio"
	"github.com/hcclrun/hcclrun/netio/control"
)

// A job started by `srun --mpi=pmi2 ./prog`, with no hcclrun: each task
// asks its slurmstepd, over the PMI-2 protocol (internal/pmi2), for its
// rank, the job's size and which node each rank is on. There is no
// launcher to serve the control plane, so rank 0 serves it in-process,
// with a key it makes, and publishes both through the PMI key-value
// space; after one fence every rank knows where to connect and with what
// key, and Init goes on as under hcclrun. The server aborts the job when
// a rank is lost (there is no launcher to judge), and rank 0's Close keeps
// it up until the other ranks have left.

// PMI key-value names; the key holds the job key (hex), which the KVS
// shares only with the job's tasks.
const (
	pmiKeyControl = "hccl-control"
	pmiKeyJobKey  = "hccl-key"
)

// hostLinger bounds how long rank 0's Close waits for the other ranks to
// leave before it stops the control plane under them.
const hostLinger = 30 * time.Second

// joinPMI is the Job of a PMI-2 task; rank 0's also carries the control
// server it hosts.
func joinPMI(t pmiTask, knobs tunables, log *slog.Logger) (Job, error) {
	c, err := pmi2.Connect(os.NewFile(uintptr(t.fd), "PMI_FD"), t.rank, t.pmiJob)
	if err != nil {
		return Job{}, fmt.Errorf("srun --mpi=pmi2: %w", err)
	}
	job, err := pmiExchange(c, t, knobs, log)
	if err != nil {
		c.Close()
		if job.host != nil {
			job.host.abandon()
		}
		return Job{}, fmt.Errorf("srun --mpi=pmi2 (rank %d of %d): %w", c.Rank(), c.Size(), err)
	}
	if err := c.Finalize(); err != nil {
		log.Debug("pmi2 finalize", "err", err)
	}
	return job, nil
}

func pmiExchange(c *pmi2.Client, t pmiTask, knobs tunables, log *slog.Logger) (Job, error) {
	j := Job{Rank: c.Rank(), Size: c.Size(), JobID: "slurm-" + t.slurmJob + "." + t.slurmStep}
	if t.slurmJob == "" {
		j.JobID = "pmi-" + t.pmiJob
	}
	m, ok, err := c.JobAttr("PMI_process_mapping")
	if err != nil {
		return j, err
	}
	if !ok {
		return j, errors.New("slurmstepd gave no PMI_process_mapping")
	}
	nodes, err := pmi2.ProcessMapping(m, j.Size)
	if err != nil {
		return j, err
	}
	j.NodeRank = nodes[j.Rank]
	j.LocalRank, j.LocalSize = pmi2.Local(nodes, j.Rank)
	if j.Rank == 0 {
		key, err := wire.NewKey()
		if err != nil {
			return j, err
		}
		ip, err := chooseIP(knobs, j.LocalSize == j.Size, "control plane", log)
		if err != nil {
			return j, err
		}
		if j.host, err = startHost(net.JoinHostPort(ip, "0"), key, j.Size, log); err != nil {
			return j, err
		}
		if err := c.Put(pmiKeyControl, j.host.srv.Addr()); err != nil {
			return j, err
		}
		if err := c.Put(pmiKeyJobKey, wire.EncodeKey(key)); err != nil {
			return j, err
		}
	}
	if err := c.Fence(); err != nil {
		return j, err
	}
	addr, ok, err := c.Get(pmiKeyControl)
	if err == nil && !ok {
		err = fmt.Errorf("rank 0 published no %s", pmiKeyControl)
	}
	if err != nil {
		return j, err
	}
	hexKey, ok, err := c.Get(pmiKeyJobKey)
	if err == nil && !ok {
		err = fmt.Errorf("rank 0 published no %s", pmiKeyJobKey)
	}
	if err != nil {
		return j, err
	}
	if j.Key, err = wire.ParseKey(hexKey); err != nil {
		return j, err
	}
	j.ControlAddr, j.controlBy = addr, " (rank 0's)"
	return j, nil
}

// chooseIP picks this host's address for what ("control plane", "data"):
// the interface HCCL_SOCKET_IFNAME names, else the one netio's chooser
// prefers (loopback when the whole job is on this host, single).
func chooseIP(knobs tunables, single bool, what string, log *slog.Logger) (string, error) {
	spec, err := netio.ParseIfSpec(knobs.SocketIfname)
	if err != nil {
		return "", fmt.Errorf("%w: HCCL_SOCKET_IFNAME: %w", ErrInvalidArgument, err)
	}
	ifs, err := netio.Interfaces()
	if err != nil {
		return "", fmt.Errorf("list network interfaces: %w", err)
	}
	choice, err := netio.ChooseInterface(ifs, spec, netio.ChooseOptions{SingleHost: single})
	if err != nil {
		return "", fmt.Errorf("choose the %s interface: %w", what, err)
	}
	log.Info(what+" interface", "nic", choice.Interface.Name, "addr", choice.Addr.String(), "why", choice.Reason)
	return choice.Addr.String(), nil
}

// controlHost is the control server rank 0 runs for a PMI-2 job.
type controlHost struct {
	srv  *control.Server
	size int
	done chan struct{} // closed when Serve returns

	mu   sync.Mutex
	gone map[int]bool  // ranks that left or were lost
	all  chan struct{} // closed when every rank but 0 is gone
	once sync.Once
}

func startHost(addr string, key []byte, size int, log *slog.Logger) (*controlHost, error) {
	srv, err := control.NewServer(control.ServerConfig{
		Addr: addr, Key: key, Size: size, AbortOnLost: true, Log: log.With("role", "control plane"),
	})
	if err != nil {
		return nil, fmt.Errorf("serve the control plane on %s: %w", addr, err)
	}
	h := &controlHost{srv: srv, size: size, done: make(chan struct{}), gone: map[int]bool{}, all: make(chan struct{})}
	if size == 1 {
		close(h.all)
	}
	go func() {
		defer close(h.done)
		if err := srv.Serve(context.Background()); err != nil {
			log.Warn("control plane stopped", "err", err)
		}
	}()
	go h.watch()
	return h, nil
}

// watch counts the ranks that are gone, from the server's events.
func (h *controlHost) watch() {
	for ev := range h.srv.Events() {
		r := -1
		switch e := ev.(type) {
		case control.RankLeft:
			r = e.Rank
		case control.RankLost:
			r = e.Rank
		}
		if r <= 0 {
			continue
		}
		h.mu.Lock()
		h.gone[r] = true
		if len(h.gone) == h.size-1 {
			h.once.Do(func() { close(h.all) })
		}
		h.mu.Unlock()
	}
}

// finish stops the server once the other ranks are gone, or after
// hostLinger.
func (h *controlHost) finish() {
	select {
	case <-h.all:
	case <-time.After(hostLinger):
	}
	h.abandon()
}

// abandon stops the server now: the other ranks see the control plane
// end, and fail rather than wait.
func (h *controlHost) abandon() {
	_ = h.srv.Close()
	<-h.done
}

// wrap is the control connection rank 0's communicators share: closing
// it also stops the server it hosts, after the others have left. Without
// a hosted server it is ctl itself.
func (h *controlHost) wrap(ctl *control.Client) controlPlane {
	if h == nil {
		return ctl
	}
	return &hostedControl{Client: ctl, host: h}
}

// shut is fail's: a rank 0 whose Init fails stops its server at once.
func (h *controlHost) shut() {
	if h != nil {
		h.abandon()
	}
}

type hostedControl struct {
	*control.Client
	host *controlHost
}

func (c *hostedControl) Close() error {
	err := c.Client.Close()
	c.host.finish()
	return err
}
