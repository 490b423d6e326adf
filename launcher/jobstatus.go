package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

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
// The launcher serves the text on an abstract unix socket (no file: it
// vanishes with the process however it dies, as a killed launcher's
// leftovers must), @hcclrun-status/<uid>/<pid>/<job id>, and answers only
// connections of its own user or root (SO_PEERCRED); hcclrun status
// finds the sockets in /proc/net/unix and reads one (QueryStatus).
// Abstract sockets belong to a network namespace: hcclrun status runs in
// the launcher's.

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

// statusPrefix starts the names of this user's status sockets.
func statusPrefix() string { return fmt.Sprintf("@hcclrun-status/%d/", os.Getuid()) }

// serveStatus listens on the job's status socket until stop is called.
// A launcher that cannot runs without one.
func (s *supervisor) serveStatus() (stop func()) {
	name := fmt.Sprintf("%s%d/%s", statusPrefix(), os.Getpid(), s.r.env.JobID)
	ln, err := net.Listen("unix", name)
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
			if sameUser(conn) {
				var b strings.Builder
				s.status().Format(&b, s.r.CollName)
				conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(conn, b.String())
			}
			conn.Close()
		}
	}()
	return func() {
		ln.Close()
		<-done
	}
}

// sameUser reports whether conn's peer runs as this process's user, or
// as root: anyone on the host can reach an abstract socket.
func sameUser(conn net.Conn) bool {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return false
	}
	return cred.Uid == uint32(os.Getuid()) || cred.Uid == 0
}

// statusSockets lists the names of this user's status sockets, of the
// launcher pid (0: every launcher), from a /proc/net/unix listing.
func statusSockets(procNetUnix string, pid int) []string {
	prefix := statusPrefix()
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(procNetUnix, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.HasPrefix(f[7], prefix) {
			continue
		}
		name := f[7]
		owner, _, _ := strings.Cut(strings.TrimPrefix(name, prefix), "/")
		if n, err := strconv.Atoi(owner); err != nil || (pid != 0 && n != pid) || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	return out
}

// ErrNoJob is QueryStatus's error when no running job matches.
var ErrNoJob = errors.New("no running hcclrun job found")

// QueryStatus writes the status of the job launched by the hcclrun of
// process pid (0: the only job running) to w.
func QueryStatus(ctx context.Context, w io.Writer, pid int) error {
	listing, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return err
	}
	names := statusSockets(string(listing), pid)
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
	for _, name := range names {
		conn, err := d.DialContext(ctx, "unix", name)
		if err != nil {
			continue // the launcher has just finished
		}
		live, conns = append(live, name), append(conns, conn)
	}
	job := func(name string) string { return strings.TrimPrefix(name, statusPrefix()) }
	switch {
	case len(live) == 0 && pid != 0:
		return fmt.Errorf("%w for process %d", ErrNoJob, pid)
	case len(live) == 0:
		return ErrNoJob
	case len(live) > 1 && pid == 0:
		var b strings.Builder
		for _, name := range live {
			b.WriteString("\n  " + job(name))
		}
		return Usagef("%d jobs are running; name one by the launcher's process id (pid/job id):%s", len(live), b.String())
	}
	for i, conn := range conns {
		if dl, ok := ctx.Deadline(); ok {
			conn.SetReadDeadline(dl)
		}
		if i > 0 {
			io.WriteString(w, "\n")
		}
		if _, err := io.Copy(w, conn); err != nil {
			return fmt.Errorf("job %s: %w", job(live[i]), err)
		}
	}
	return nil
}
