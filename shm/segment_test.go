package shm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// tmpfileWorks reports whether dir takes O_TMPFILE here; where it does not,
// Create falls back to a name that lives for a moment.
func tmpfileWorks(t *testing.T, dir string) bool {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Logf("O_TMPFILE in %s: %v", dir, err)
		return false
	}
	unix.Close(fd)
	return true
}

// TestCreateLeavesNoName: a segment's file never has a name in /dev/shm,
// not even for a moment, and cannot be given one (O_EXCL); it is sized,
// private to its owner (0600), and its memory is the file's.
func TestCreateLeavesNoName(t *testing.T) {
	never := tmpfileWorks(t, DefaultDir)
	tests := []struct {
		name string
		size int
		want int // mapped size
	}{
		{"one byte rounds to a page", 1, os.Getpagesize()},
		{"exact pages", 8 * os.Getpagesize(), 8 * os.Getpagesize()},
		{"4 MiB ring pair", 2 * RingBytes(4<<20), roundUp(2*RingBytes(4<<20), os.Getpagesize())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := watchCreates(t, DefaultDir)
			seg, err := Create(tt.size, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer seg.Close()
			if got := seg.Size(); got != tt.want {
				t.Errorf("size %d, want %d", got, tt.want)
			}
			fd := int(seg.f.Fd())
			id := fdFile(t, fd)
			if names := namesOf(t, DefaultDir, id); len(names) > 0 {
				t.Errorf("the open segment's file is named %v in %s", names, DefaultDir)
			}
			if left := ownNames(t, DefaultDir, os.Getpid()); len(left) > 0 {
				t.Errorf("%s still holds %v after Create", DefaultDir, left)
			}
			if created := w.names(ownPrefix()); never && len(created) > 0 {
				t.Errorf("Create put %v in %s for a moment", created, DefaultDir)
			}
			link := filepath.Join(DefaultDir, ownPrefix()+"link")
			if err := unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, link, unix.AT_SYMLINK_FOLLOW); err == nil {
				os.Remove(link)
				t.Error("the segment's file could be linked into the tmpfs")
			}
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				t.Fatal(err)
			}
			if perm := st.Mode & 0o777; perm != 0o600 {
				t.Errorf("mode %#o, want 0600", perm)
			}
			if st.Nlink != 0 {
				t.Errorf("file still has %d links", st.Nlink)
			}
			if st.Blocks*512 < int64(tt.want) {
				t.Errorf("only %d bytes allocated of %d: fallocate missing", st.Blocks*512, tt.want)
			}
			// The memory is the file's, which peers map: writes go both
			// ways between the mapping and the descriptor.
			b := seg.Bytes()
			b[0], b[len(b)-1] = 1, 2
			var got [1]byte
			if _, err := unix.Pread(fd, got[:], 0); err != nil || got[0] != 1 {
				t.Errorf("the file's first byte is %d (%v), the mapping wrote 1", got[0], err)
			}
			if _, err := unix.Pread(fd, got[:], int64(len(b)-1)); err != nil || got[0] != 2 {
				t.Errorf("the file's last byte is %d (%v), the mapping wrote 2", got[0], err)
			}
			if _, err := unix.Pwrite(fd, []byte{3}, 1); err != nil || b[1] != 3 {
				t.Errorf("the mapping shows %d (%v) where the file was written 3", b[1], err)
			}
		})
	}
}

// TestCreateFallback: where the kernel has no O_TMPFILE it sees only its
// O_DIRECTORY part and refuses to open the directory for writing (EISDIR).
// Create then makes a named file and unlinks it at once: the watch sees
// the name come (which shows it would see one from O_TMPFILE too), none is
// left, and segments and regions work as before.
func TestCreateFallback(t *testing.T) {
	saved := tmpfileFlag
	tmpfileFlag = unix.O_DIRECTORY
	t.Cleanup(func() { tmpfileFlag = saved })

	w := watchCreates(t, DefaultDir)
	seg, err := Create(4096, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	if created := w.names(ownPrefix()); len(created) != 1 {
		t.Errorf("the fallback created %v, want one name of ours", created)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(seg.f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Nlink != 0 || st.Mode&0o777 != 0o600 || st.Blocks*512 < 4096 {
		t.Errorf("fallback file: %d links, mode %#o, %d bytes allocated", st.Nlink, st.Mode&0o777, st.Blocks*512)
	}

	r, err := NewRegion(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Free()
	r.Bytes()[7] = 42
	ref, _ := FindRegion(r.Bytes())
	peer := NewPeerRegions(os.Getpid())
	defer peer.Close()
	if got, err := peer.Payload(ref, 8); err != nil || got[7] != 42 {
		t.Errorf("a peer's view of a fallback region: %v, %v", got, err)
	}
	if left := ownNames(t, DefaultDir, os.Getpid()); len(left) > 0 {
		t.Errorf("%s holds %v after the fallback", DefaultDir, left)
	}
}

// TestCreateAnonymousErrors: an error other than "no O_TMPFILE here" is
// reported as it is, naming the directory, without a fallback.
func TestCreateAnonymousErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		dir  string
		want error
	}{
		{filepath.Join(t.TempDir(), "absent"), unix.ENOENT},
		{file, unix.ENOTDIR},
	} {
		fd, _, err := createAnonymous(tt.dir)
		if err == nil {
			unix.Close(fd)
			t.Errorf("%s: created", tt.dir)
			continue
		}
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), "shm: create an unnamed file in "+tt.dir) {
			t.Errorf("%s: %v, want %v from the unnamed create", tt.dir, err, tt.want)
		}
	}
}

func TestCreateRejectsBadSizes(t *testing.T) {
	for _, size := range []int{0, -1} {
		if seg, err := Create(size, Options{}); err == nil {
			seg.Close()
			t.Errorf("Create(%d) succeeded", size)
		}
	}
}

func TestCreateIntoMissingDir(t *testing.T) {
	_, err := Create(4096, Options{Dir: filepath.Join(t.TempDir(), "absent")})
	if err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("err = %v, want a statfs error naming the directory", err)
	}
}

func TestSpaceError(t *testing.T) {
	const mib = 1 << 20
	statfsFails := errors.New("statfs: boom")
	tests := []struct {
		name    string
		free    uint64
		freeErr error
		need    uint64
		wantErr string // "" means success
		noSpace bool
	}{
		{"the message of the issue", 64 * mib, nil, 512 * mib,
			"/dev/shm has 64 MiB free, this job needs 512 MiB: enlarge it or lower HCCL_BUFFSIZE", true},
		{"small numbers", 3000, nil, 8192, "/dev/shm has 2 KiB free, this job needs 8 KiB: enlarge it or lower HCCL_BUFFSIZE", true},
		{"big numbers", 1 << 20, nil, 24 << 30, "/dev/shm has 1 MiB free, this job needs 24 GiB: enlarge it or lower HCCL_BUFFSIZE", true},
		{"exactly enough", 512 * mib, nil, 512 * mib, "", false},
		{"plenty", 24 << 30, nil, 512 * mib, "", false},
		{"statfs fails", 0, statfsFails, 1, "statfs: boom", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			free := func(dir string) (uint64, error) {
				if dir != DefaultDir {
					t.Errorf("statfs of %q, want %q", dir, DefaultDir)
				}
				return tt.free, tt.freeErr
			}
			err := CheckSpace(DefaultDir, tt.need, free)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckSpace: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if errors.Is(err, ErrNoSpace) != tt.noSpace {
				t.Errorf("errors.Is(err, ErrNoSpace) = %v, want %v", !tt.noSpace, tt.noSpace)
			}
			// Create must check before it creates anything.
			seg, cerr := Create(int(max(tt.need, 1)), Options{FreeSpace: free})
			if cerr == nil {
				seg.Close()
				t.Fatal("Create succeeded with a fake full tmpfs")
			}
			if cerr.Error() != tt.wantErr && tt.noSpace {
				// Create rounds need to pages; the free figure must be the same.
				var se *SpaceError
				if !errors.As(cerr, &se) || se.Free != tt.free {
					t.Errorf("Create: %v", cerr)
				}
			}
		})
	}
}

func TestStatfsFreeOfDevShm(t *testing.T) {
	free, err := StatfsFree(DefaultDir)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(DefaultDir, &st); err != nil {
		t.Fatal(err)
	}
	if total := st.Blocks * uint64(st.Bsize); free == 0 || free > total {
		t.Errorf("free %d of %d", free, total)
	}
}

// TestPopulated counts the minor page faults of touching every page of a
// fresh segment: Create (and Map, on the receiving side) must have filled
// the page tables already. A plain mapping of the same file is the control
// that shows the measurement can see faults. It counts the faults of its
// own thread only: the Go runtime faults too.
func TestPopulated(t *testing.T) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	const size = 16 << 20
	pages := size / os.Getpagesize()
	seg, err := Create(size, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()

	// Control: the same file mapped again without populating.
	raw, err := unix.Mmap(int(seg.f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(raw)
	// Fault-around maps up to 16 pages per read fault, hence /32.
	control := threadFaults(t, func() { writePages(raw) })
	t.Logf("control: %d faults for %d pages", control, pages)
	if control < int64(pages)/32 {
		t.Fatalf("control mapping took only %d faults for %d pages: the measurement is blind", control, pages)
	}
	if got := threadFaults(t, func() { writePages(seg.Bytes()) }); got > int64(pages)/256 {
		t.Errorf("created segment: %d faults for %d pages, want (almost) none", got, pages)
	}

	dup, err := unix.Dup(int(seg.f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	peer, err := Map(os.NewFile(uintptr(dup), "dup"))
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if got := threadFaults(t, func() { writePages(peer.Bytes()) }); got > int64(pages)/256 {
		t.Errorf("mapped segment: %d faults for %d pages, want (almost) none", got, pages)
	}
}

// threadFaults returns the minor page faults of the calling thread (which
// the caller locked) while f ran.
func threadFaults(t *testing.T, f func()) int64 {
	t.Helper()
	var before, after unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &before); err != nil {
		t.Fatal(err)
	}
	f()
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &after); err != nil {
		t.Fatal(err)
	}
	return after.Minflt - before.Minflt
}

// writePages writes a byte of every page of b.
func writePages(b []byte) {
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i]++
	}
}

func TestMapRejectsNonFiles(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if seg, err := Map(r); err == nil {
		seg.Close()
		t.Fatal("Map of a pipe succeeded")
	}
	empty, err := os.CreateTemp(t.TempDir(), "empty")
	if err != nil {
		t.Fatal(err)
	}
	if seg, err := Map(empty); err == nil {
		seg.Close()
		t.Fatal("Map of an empty file succeeded")
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	seg, err := Create(4096, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := seg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := seg.Close(); err != nil {
		t.Fatal(err)
	}
	if seg.Bytes() != nil || seg.Size() != 0 {
		t.Error("closed segment still exposes memory")
	}
}

// Prefault reads every page of a lazy segment: afterwards touching them
// faults (almost) never; on a closed segment it does nothing.
func TestSegmentPrefault(t *testing.T) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	const size = 16 << 20
	seg, err := Create(size, Options{Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	seg.Prefault()
	if faults, pages := threadFaults(t, func() { writePages(seg.Bytes()) }), int64(size/os.Getpagesize()); faults > pages/256 {
		t.Errorf("after Prefault: %d faults for %d pages, want (almost) none", faults, pages)
	}
	if err := seg.Close(); err != nil {
		t.Fatal(err)
	}
	seg.Prefault()
}
