package launcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/ranktable"
)

// Run starts the job, waits for every rank and tears the job down on the
// first failure. It returns nil only when every rank exited with code 0;
// otherwise a *RankError (a rank failed), *TimeoutError, *InterruptError,
// *StartError, a usage error (errors.Is(err, ErrUsage)), or the error that
// stopped the launcher. ExitCode maps each to hcclrun's exit code. When ctx is
// cancelled the job is torn down as for SIGTERM and Run returns ctx's error.
//
// Run returns after every rank has been reaped, its output flushed, the
// control plane closed and the rank tables removed.
func (j *Job) Run(ctx context.Context) error {
	if j.Hosts == nil && j.Placement != nil {
		return j.runPlaced(ctx)
	}
	r, err := j.resolve(true)
	if err != nil {
		if j.Hosts != nil {
			closeSpawners(j.Hosts)
		}
		return err
	}
	ctl, data, err := r.prepare(ctx)
	if err != nil {
		closeSpawners(r.hosts)
		return err
	}
	s := newSupervisor(r, ctl)
	defer s.cleanup()
	defer s.serveStatus()() // jobstatus.go
	for i, h := range r.hosts {
		path, err := h.Spawner.StageRankTable(data)
		if err != nil {
			return err
		}
		s.tablePaths[i] = path
	}
	return s.run(ctx)
}

// runPlaced connects to the placement's hosts and runs the job on them.
func (j *Job) runPlaced(ctx context.Context) error {
	if err := checkRanks(j.NP, nil); err != nil {
		return err
	}
	if n := j.Placement.Size(); n > MaxRanks {
		return Usagef("the placement holds %d ranks, more than the %d a job may have", n, MaxRanks)
	}
	if j.NP != 0 && j.NP != j.Placement.Size() {
		return Usagef("np is %d but the placement holds %d ranks", j.NP, j.Placement.Size())
	}
	if j.Program == "" {
		return Usagef("no program to run")
	}
	log := j.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	connect := connectHosts
	if j.Remote.Slurm != nil {
		connect = connectSlurm
	}
	hosts, listen, err := connect(ctx, j.Placement, j.Remote, log)
	if err != nil {
		return err
	}
	placed := *j
	placed.Hosts = hosts
	if placed.ControlListen == "" {
		placed.ControlListen = listen
	}
	return placed.Run(ctx)
}

// prepare does what comes before the first rank: the -x variables, the job
// id and key, the control plane (with HCCL_HEARTBEAT_TIMEOUT), and the rank
// table that names it.
func (r *resolved) prepare(ctx context.Context) (controlPlane, []byte, error) {
	exports, missing, err := ExportEnv(r.Export, os.LookupEnv)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range missing {
		r.log.Warn("-x: variable not set in the launcher's environment, not exported", "name", name)
	}
	r.exports = exports
	lostAfter, err := heartbeatTimeout(exports, os.LookupEnv)
	if err != nil {
		return nil, nil, err
	}
	jobID := r.JobID
	if jobID == "" {
		if jobID, err = newJobID(); err != nil {
			return nil, nil, err
		}
	}
	key, err := jobKey(r.hosts)
	if err != nil {
		return nil, nil, err
	}
	listen := r.ControlListen
	if listen == "" {
		listen = DefaultControlListen
	}
	ctl, err := startControl(ctx, controlConfig{
		listen: listen, jobID: jobID, key: key, size: len(r.slots), lostAfter: lostAfter, log: r.log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("start control plane on %s: %w", listen, err)
	}
	addr, err := advertised(ctl.Addr(), r.ControlAdvertise)
	if err == nil {
		var table *ranktable.Table
		if table, err = r.rankTable(jobID, addr); err == nil {
			var data []byte
			if data, err = table.Marshal(); err == nil {
				r.cpus = tableCPUs(table)
				r.env = JobEnv{ControlAddr: addr, JobID: jobID, JobKey: wire.EncodeKey(key), Nodes: len(r.hosts)}
				r.env.MasterAddr, r.env.MasterPort = r.master(addr)
				return ctl, data, nil
			}
		}
	}
	ctl.Close()
	return nil, nil, err
}

// tableCPUs returns every rank's cpu_list from the table, parsed (the table
// was generated from valid lists).
func tableCPUs(t *ranktable.Table) [][]int {
	cpus := make([][]int, t.Size())
	for rank := range cpus {
		if _, d, err := t.Device(rank); err == nil {
			cpus[rank], _ = d.CPUs()
		}
	}
	return cpus
}

// rankCPUs returns the CPUs rank is bound to, nil when it is not.
func (r *resolved) rankCPUs(rank int) []int {
	if rank < len(r.cpus) {
		return r.cpus[rank]
	}
	return nil
}

// advertised is the control address the ranks dial: the listener's, or
// advertise with the listener's port when advertise has none.
func advertised(listenerAddr, advertise string) (string, error) {
	if advertise == "" {
		return listenerAddr, nil
	}
	if _, _, err := net.SplitHostPort(advertise); err == nil {
		return advertise, nil
	}
	_, port, err := net.SplitHostPort(listenerAddr)
	if err != nil {
		return "", fmt.Errorf("control plane address %q: %w", listenerAddr, err)
	}
	return net.JoinHostPort(advertise, port), nil
}

// newJobID returns a fresh job id: "hccl-" and 12 hex digits.
func newJobID() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new job id: %w", err)
	}
	return "hccl-" + hex.EncodeToString(b[:]), nil
}

func closeSpawners(hosts []Host) {
	for _, h := range hosts {
		if h.Spawner != nil {
			_ = h.Spawner.Close()
		}
	}
}
