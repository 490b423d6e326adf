package shm

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The leak checks of this package's tests look only at what the test's own
// processes made: names that carry one of their pids (the fallback's, see
// createUnlinked), and the descriptors and mappings that still refer to a
// segment's file. /dev/shm is shared by every job on the machine, and
// another job's files, even under our prefix, are not this test's leak.

// ownNames lists the entries of dir named by one of pids: NamePrefix, the
// pid, a dash.
func ownNames(t *testing.T, dir string, pids ...int) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var ours []string
	for _, e := range ents {
		for _, pid := range pids {
			if strings.HasPrefix(e.Name(), NamePrefix+strconv.Itoa(pid)+"-") {
				ours = append(ours, e.Name())
			}
		}
	}
	return ours
}

// fileID is a file by device and inode.
type fileID struct{ dev, ino uint64 }

func fdFile(t *testing.T, fd int) fileID {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatalf("fstat descriptor %d: %v", fd, err)
	}
	return fileID{st.Dev, st.Ino}
}

// mapsLine is one line of /proc/PID/maps: where, and which file.
type mapsLine struct {
	start uint64
	file  fileID
	text  string
}

func readMaps(t *testing.T, pid int) []mapsLine {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatalf("maps of process %d: %v", pid, err)
	}
	var out []mapsLine
	for _, ln := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		// start-end perms offset major:minor inode [path]
		fs := strings.Fields(ln)
		if len(fs) < 5 {
			continue
		}
		lo, _, _ := strings.Cut(fs[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		maj, min, _ := strings.Cut(fs[3], ":")
		major, err2 := strconv.ParseUint(maj, 16, 32)
		minor, err3 := strconv.ParseUint(min, 16, 32)
		ino, err4 := strconv.ParseUint(fs[4], 10, 64)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatalf("maps of process %d: %q: %v", pid, ln, err)
		}
		out = append(out, mapsLine{start, fileID{unix.Mkdev(uint32(major), uint32(minor)), ino}, ln})
	}
	return out
}

// mappedFile is the file mapped at mem's first byte, from /proc/self/maps:
// a received segment has no descriptor left to ask.
func mappedFile(t *testing.T, mem []byte) fileID {
	t.Helper()
	for _, m := range readMaps(t, os.Getpid()) {
		if m.start == Addr(mem) {
			return m.file
		}
	}
	t.Fatalf("no mapping starts at %#x", Addr(mem))
	return fileID{}
}

// holders lists what of process pid still refers to f: its descriptors
// and its mappings of it.
func holders(t *testing.T, pid int, f fileID) []string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("descriptors of process %d: %v", pid, err)
	}
	var out []string
	for _, fd := range fds {
		fi, err := os.Stat(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue // closed meanwhile, or not a file
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Dev == f.dev && st.Ino == f.ino {
			link, _ := os.Readlink(filepath.Join(dir, fd.Name()))
			out = append(out, fmt.Sprintf("fd %s -> %s", fd.Name(), link))
		}
	}
	for _, m := range readMaps(t, pid) {
		if m.file == f {
			out = append(out, "mapping "+m.text)
		}
	}
	return out
}

// namesOf lists the entries of dir that are the file f.
func namesOf(t *testing.T, dir string, f fileID) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue // another job's file, gone meanwhile
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Dev == f.dev && st.Ino == f.ino {
			out = append(out, e.Name())
		}
	}
	return out
}

// createWatch records, with inotify, every name created in a directory
// from its start on: a name that lives for microseconds is seen too.
type createWatch struct {
	t  *testing.T
	fd int
}

func watchCreates(t *testing.T, dir string) *createWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		t.Fatalf("inotify watch of %s: %v", dir, err)
	}
	return &createWatch{t: t, fd: fd}
}

// names returns the names created so far with one of prefixes (every name
// when there is none), and forgets them.
func (w *createWatch) names(prefixes ...string) []string {
	w.t.Helper()
	var out []string
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			return out
		}
		if err != nil {
			w.t.Fatalf("read inotify events: %v", err)
		}
		// struct inotify_event: wd, mask, cookie, len, then len bytes of
		// NUL-padded name.
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+nameLen]), "\x00")
			off += unix.SizeofInotifyEvent + nameLen
			if mask&unix.IN_Q_OVERFLOW != 0 {
				w.t.Fatal("inotify queue overflowed: the names created are unknown")
			}
			keep := len(prefixes) == 0
			for _, p := range prefixes {
				keep = keep || strings.HasPrefix(name, p)
			}
			if keep {
				out = append(out, name)
			}
		}
	}
}

// ownPrefix is the start of the names this process gives in the fallback.
func ownPrefix() string { return NamePrefix + strconv.Itoa(os.Getpid()) + "-" }

// plantForeign puts a file under our prefix that no process of this test
// made, as a killed rank of another job leaves one, and removes it when the
// test ends. Its pid is pid_max, which no process can have.
func plantForeign(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatalf("pid_max: %v", err)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	path := filepath.Join(DefaultDir, NamePrefix+strings.TrimSpace(string(b))+"-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("plant a foreign file: %v", err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(path) })
	return path
}

// TestLeakChecksIgnoreForeignFiles: a file under our prefix that another
// job left in /dev/shm does not fail this package's leak checks, which
// still see what is this process's: its descriptor and mapping of a
// segment while open, nothing once closed.
func TestLeakChecksIgnoreForeignFiles(t *testing.T) {
	foreign := plantForeign(t)
	if m, _ := filepath.Glob(filepath.Join(DefaultDir, NamePrefix+"*")); !slices.Contains(m, foreign) {
		t.Fatalf("the planted %s is not in %s's listing: the test proves nothing", foreign, DefaultDir)
	}
	seg, err := Create(1<<20, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := fdFile(t, int(seg.f.Fd()))
	if h := holders(t, os.Getpid(), id); len(h) < 2 {
		t.Fatalf("an open segment shows as %v: want its descriptor and its mapping", h)
	}
	if err := seg.Close(); err != nil {
		t.Fatal(err)
	}
	if left := ownNames(t, DefaultDir, os.Getpid()); len(left) > 0 {
		t.Errorf("%s holds %v of ours", DefaultDir, left)
	}
	if h := holders(t, os.Getpid(), id); len(h) > 0 {
		t.Errorf("a closed segment is still held: %v", h)
	}
}
