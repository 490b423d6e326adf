package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hcclrun/hcclrun/netio/control"
)

// A running job's status (hcclrun status, or SIGUSR1 to hcclrun): which
// collective every rank is in and which peer it waits for, from the
// control plane's view of the ranks. Every rank's heartbeat carries its
// last collective number, whether it is inside it, and where inside it
// it waits (wire.Where: the plan step and the peer of the op it runs,
// stored by the executor before each op that may wait), so the view is
// at most a heartbeat old and costs the ranks nothing more. A rank that
// has been silent for two heartbeats is flagged: stopped, hung outside
// Go's scheduler, or cut off, while its peers' rows say who waits for it.
//
// The launcher serves the text on a unix socket, StatusDir()/<pid>.<job
// id>.sock, in a directory only its user may enter; hcclrun status reads
// it (QueryStatus).

// JobStatus is a snapshot of a running job's ranks.
type JobStatus struct {
	JobID     string
	Heartbeat time.Duration
	Ranks     []control.RankStatus
	Hosts     []string // by rank
}

// silentBeats is how many heartbeats of silence flag a rank.
const silentBeats = 2

// Format writes st as a table, one row per rank, naming the collective
// of each with collName (nil: its number).
func (st *JobStatus) Format(w io.Writer, collName func(uint8) string) error {
	if collName == nil {
		collName = func(c uint8) string { return "collective " + strconv.Itoa(int(c)) }
	}
	fmt.Fprintf(w, "job %s: %d ranks, heartbeat %v (every row is at most a heartbeat old)\n", st.JobID, len(st.Ranks), st.Heartbeat)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RANK\tHOST\tSTATE\tCALL\tWAITS FOR\tSILENT")
	var flagged []string
	for _, r := range st.Ranks {
		host := ""
		if r.Rank < len(st.Hosts) {
			host = st.Hosts[r.Rank]
		}
		call, peer := "-", "-"
		switch {
		case r.InCall:
			call = fmt.Sprintf("#%d", r.Seq)
			if c, ok := r.Where.Coll(); ok {
				call += fmt.Sprintf(" %s step %d", collName(c), r.Where.Step())
				if p := r.Where.Peer(); p >= 0 {
					peer = "rank " + strconv.Itoa(p)
				}
			}
		case r.Seq > 0:
			call = fmt.Sprintf("between calls (last #%d)", r.Seq)
		}
		state := r.State.String()
		if r.State == control.Alive && st.Heartbeat > 0 && r.SilentFor > silentBeats*st.Heartbeat {
			state = "SILENT"
			flagged = append(flagged, strconv.Itoa(r.Rank))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%v\n", r.Rank, host, state, call, peer, r.SilentFor.Round(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(flagged) > 0 {
		_, err := fmt.Fprintf(w, "SILENT for more than %d heartbeats (stopped, hung or cut off): rank %s\n", silentBeats, strings.Join(flagged, ", rank "))
		return err
	}
	return nil
}

// status takes the job's status now. It is safe to call from any
// goroutine: the control plane's view has its own lock, and the hosts
// are fixed.
func (s *supervisor) status() *JobStatus {
	st := &JobStatus{JobID: s.r.env.JobID, Heartbeat: s.ctl.Heartbeat(), Ranks: s.ctl.Status(),
		Hosts: make([]string, len(s.r.slots))}
	for rank, slot := range s.r.slots {
		st.Hosts[rank] = s.r.hosts[slot.host].Spawner.Host()
	}
	return st
}

// printStatus writes the status to the launcher's stderr (SIGUSR1).
func (s *supervisor) printStatus() {
	var b strings.Builder
	s.status().Format(&b, s.r.CollName)
	io.WriteString(s.r.stderr, b.String())
}

// StatusDir is the directory of the running jobs' status sockets:
// $XDG_RUNTIME_DIR/hcclrun, else hcclrun-<uid> in the temporary
// directory.
func StatusDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "hcclrun")
	}
	return filepath.Join(os.TempDir(), "hcclrun-"+strconv.Itoa(os.Getuid()))
}

// serveStatus listens on the job's status socket until stop is called.
// A launcher that cannot (no writable directory) runs without one.
func (s *supervisor) serveStatus() (stop func()) {
	dir := StatusDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		s.r.log.Debug("no status socket", "err", err)
		return func() {}
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 ||
		fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
		s.r.log.Warn("no status socket: its directory is not this user's alone", "dir", dir)
		return func() {}
	}
	path := filepath.Join(dir, fmt.Sprintf("%d.%s.sock", os.Getpid(), s.r.env.JobID))
	ln, err := net.Listen("unix", path)
	if err != nil {
		s.r.log.Debug("no status socket", "err", err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			var b strings.Builder
			s.status().Format(&b, s.r.CollName)
			conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(conn, b.String())
			conn.Close()
		}
	}()
	return func() {
		ln.Close() // removes the socket file
		<-done
	}
}

// ErrNoJob is QueryStatus's error when no running job matches.
var ErrNoJob = errors.New("no running hcclrun job found")

// QueryStatus writes the status of the job launched by the hcclrun of
// process pid (0: the only job running) to w.
func QueryStatus(ctx context.Context, w io.Writer, pid int) error {
	socks, err := filepath.Glob(filepath.Join(StatusDir(), "*.sock"))
	if err != nil {
		return err
	}
	var (
		d     net.Dialer
		live  []string
		conns []net.Conn
	)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for _, p := range socks {
		owner, _, _ := strings.Cut(filepath.Base(p), ".")
		if n, err := strconv.Atoi(owner); err != nil || (pid != 0 && n != pid) {
			continue
		}
		conn, err := d.DialContext(ctx, "unix", p)
		if err != nil {
			// A launcher killed before it could remove its socket: no one
			// listens (its pid may be another process's by now).
			if errors.Is(err, syscall.ECONNREFUSED) {
				os.Remove(p)
			}
			continue
		}
		live, conns = append(live, p), append(conns, conn)
	}
	switch {
	case len(live) == 0 && pid != 0:
		return fmt.Errorf("%w for process %d in %s", ErrNoJob, pid, StatusDir())
	case len(live) == 0:
		return fmt.Errorf("%w in %s", ErrNoJob, StatusDir())
	case len(live) > 1 && pid == 0:
		var b strings.Builder
		for _, p := range live {
			b.WriteString("\n  " + strings.TrimSuffix(filepath.Base(p), ".sock"))
		}
		return Usagef("%d jobs are running; name one by the launcher's process id (pid.jobid):%s", len(live), b.String())
	}
	for i, conn := range conns {
		if dl, ok := ctx.Deadline(); ok {
			conn.SetReadDeadline(dl)
		}
		if i > 0 {
			io.WriteString(w, "\n")
		}
		if _, err := io.Copy(w, conn); err != nil {
			return fmt.Errorf("job %s: %w", filepath.Base(live[i]), err)
		}
	}
	return nil
}
