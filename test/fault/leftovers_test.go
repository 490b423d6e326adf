package fault

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// What a job may leave behind, read from /proc and /dev/shm (no ss or lsof
// on a fresh machine, and tests install nothing).

// listener is a listening socket: TCP by local address, or a unix socket
// by name.
type listener struct {
	addr  string // "127.0.0.1:34567", "[::]:80", "@hcclrun/job/0"
	port  int    // TCP only
	inode string
}

// snapshot is what a job held while it ran, for the check after it.
type snapshot struct {
	listeners []listener
}

// takeSnapshot lists the listening sockets; with pids, only those these
// processes hold.
func takeSnapshot(t *testing.T, pids []int) snapshot {
	t.Helper()
	var s snapshot
	ls := listeningSockets(t)
	if pids == nil {
		s.listeners = ls
		return s
	}
	owned := map[string]bool{}
	for _, pid := range pids {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if ino, ok := strings.CutPrefix(l, "socket:["); ok && err == nil {
				owned[strings.TrimSuffix(ino, "]")] = true
			}
		}
	}
	for _, l := range ls {
		if owned[l.inode] {
			s.listeners = append(s.listeners, l)
		}
	}
	return s
}

// listeningSockets parses /proc/net/tcp, tcp6 (state 0A) and unix (state
// 01 with the listening flag).
func listeningSockets(t *testing.T) []listener {
	t.Helper()
	var out []listener
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, ln := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(ln)
			if len(fs) < 10 || fs[3] != "0A" {
				continue
			}
			ip, port, ok := parseHexAddr(fs[1])
			if !ok {
				continue
			}
			out = append(out, listener{addr: net.JoinHostPort(ip.String(), strconv.Itoa(port)), port: port, inode: fs[9]})
		}
	}
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range strings.Split(string(b), "\n")[1:] {
		// Num RefCount Protocol Flags Type St Inode Path
		fs := strings.Fields(ln)
		if len(fs) < 8 || fs[3] != "00010000" {
			continue
		}
		out = append(out, listener{addr: fs[7], inode: fs[6]})
	}
	return out
}

// parseHexAddr reads /proc/net/tcp's "0100007F:1F90".
func parseHexAddr(s string) (net.IP, int, bool) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil, 0, false
	}
	raw := make([]byte, len(h)/2)
	for i := range raw {
		v, err := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		if err != nil {
			return nil, 0, false
		}
		raw[i] = byte(v)
	}
	// Each 32-bit word is in host (little-endian) order.
	for w := 0; w+4 <= len(raw); w += 4 {
		slices.Reverse(raw[w : w+4])
	}
	return net.IP(raw), int(port), true
}

// jobPids are the live processes whose environment carries the job's
// token, hcclrun's pid and the pids the ranks printed. Every pid found is
// also remembered (seenPids), for the checks after the processes are gone.
func (j *job) jobPids(extra []int) []int {
	set := map[int]bool{j.cmd.Process.Pid: true}
	for _, p := range extra {
		set[p] = true
	}
	defer func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.seen == nil {
			j.seen = map[int]bool{}
		}
		for p := range set {
			j.seen[p] = true
		}
	}()
	want := []byte(tokenEnv + "=" + j.token)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(b, want) {
			set[pid] = true
		}
	}
	var pids []int
	for p := range set {
		pids = append(pids, p)
	}
	slices.Sort(pids)
	return pids
}

// noteRunning records the listening sockets the job's processes hold now,
// for the check after the job.
func (j *job) noteRunning(rs []rank) {
	j.t.Helper()
	j.running = takeSnapshot(j.t, j.jobPids(rankPids(rs)))
	if len(j.running.listeners) == 0 {
		// A job that is ending closes its listeners before hcclrun exits.
		select {
		case <-j.exited:
			// Too quick to catch: the check still knows the control port.
			j.t.Logf("the job ended before its listening sockets could be listed")
		case <-time.After(2 * time.Second):
			j.t.Fatalf("the job holds no listening socket: the check would prove nothing")
		}
	}
}

func rankPids(rs []rank) []int {
	var p []int
	for _, r := range rs {
		if r.pid > 0 {
			p = append(p, r.pid)
		}
	}
	return p
}

// alive returns ps's "pid stat" lines of the pids that are not zombies.
// PID 1 here reaps orphans seconds late, so a dead rank may linger as a
// zombie, which kill -0 would call alive.
func alive(pids []int) []string {
	if len(pids) == 0 {
		return nil
	}
	var list []string
	for _, p := range pids {
		list = append(list, strconv.Itoa(p))
	}
	out, _ := exec.Command("ps", "-o", "pid=,stat=,args=", "-p", strings.Join(list, ",")).Output()
	var live []string
	for _, ln := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fs := strings.Fields(ln)
		if len(fs) >= 2 && !strings.HasPrefix(fs[1], "Z") {
			live = append(live, strings.TrimSpace(ln))
		}
	}
	return live
}

// seenPids are every pid of the job found so far: hcclrun's, the ranks'
// that printed their start line, and those jobPids found by the token.
func (j *job) seenPids(rs []rank) []int {
	j.jobPids(rankPids(rs))
	j.mu.Lock()
	defer j.mu.Unlock()
	var pids []int
	for p := range j.seen {
		pids = append(pids, p)
	}
	slices.Sort(pids)
	return pids
}

// shmNames lists the files in /dev/shm named by one of pids: shm names a
// segment "hcclrun-PID-RANDOM" where the tmpfs has no O_TMPFILE (and
// unlinks it at once). Files of other jobs, under whatever name, are not
// this job's leftovers.
func shmNames(pids []int) []string {
	var left []string
	for _, p := range pids {
		m, _ := filepath.Glob("/dev/shm/hcclrun-" + strconv.Itoa(p) + "-*")
		left = append(left, m...)
	}
	return left
}

// checkClean asserts that, once hcclrun has exited, nothing of the job is
// left: no live process, no /dev/shm file named by one of its processes,
// none of the listening sockets it held (nor its control port, nor a unix
// socket of its job id). It returns how long the processes took to go.
func (j *job) checkClean(rs []rank) time.Duration {
	j.t.Helper()
	start := time.Now()
	var live []string
	for {
		live = alive(j.jobPids(rankPids(rs)))
		if len(live) == 0 || time.Since(start) > 3*time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	gone := time.Since(start)
	if len(live) > 0 {
		j.t.Errorf("processes of the job alive %v after hcclrun exited:\n%s", gone.Round(time.Millisecond), strings.Join(live, "\n"))
	}

	// With the processes gone, a name one of them gave is a leftover: a
	// live process would have unlinked it within microseconds.
	if shm := shmNames(j.seenPids(rs)); len(shm) > 0 {
		j.t.Errorf("left in /dev/shm: %v", shm)
	}

	held := map[string]bool{}
	ports := map[int]bool{}
	for _, l := range j.running.listeners {
		held[l.inode] = true
		if l.port > 0 {
			ports[l.port] = true
		}
	}
	var jobIDs []string
	for _, r := range rs {
		if _, p, err := net.SplitHostPort(r.control); err == nil {
			n, _ := strconv.Atoi(p)
			ports[n] = true
		}
		if r.jobID != "" && !slices.Contains(jobIDs, r.jobID) {
			jobIDs = append(jobIDs, r.jobID)
		}
	}
	for _, l := range listeningSockets(j.t) {
		ours := held[l.inode] || ports[l.port] && l.port > 0
		for _, id := range jobIDs {
			ours = ours || strings.HasPrefix(l.addr, "@hcclrun/"+id+"/")
		}
		if ours {
			j.t.Errorf("listening socket of the job still open: %s (inode %s)", l.addr, l.inode)
		}
	}
	return gone
}

// jobKey reads HCCL_JOB_KEY from a running rank's environment (the suite
// is root, as the ranks' owner is), to check that it is never printed.
func (j *job) jobKey(r rank) string {
	j.t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", r.pid))
	if err != nil {
		j.t.Fatalf("environment of rank pid %d: %v", r.pid, err)
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("HCCL_JOB_KEY=")); ok && len(v) > 0 {
			return string(v)
		}
	}
	j.t.Fatalf("rank pid %d has no HCCL_JOB_KEY", r.pid)
	return ""
}

// checkKeyHidden fails the test if key appears in the job's output.
func (j *job) checkKeyHidden(key string) {
	j.t.Helper()
	if strings.Contains(j.output(), key) {
		j.t.Errorf("the job key appears in the job's output")
	}
}
