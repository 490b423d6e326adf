package shm

import (
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// ourEntries lists the files of ours in dir; after any Create it must be
// empty, since names are removed as soon as they are created.
func ourEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var ours []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), NamePrefix) {
			ours = append(ours, e.Name())
		}
	}
	return ours
}

func TestCreateLeavesNoName(t *testing.T) {
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
			seg, err := Create(tt.size, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer seg.Close()
			if got := seg.Size(); got != tt.want {
				t.Errorf("size %d, want %d", got, tt.want)
			}
			if left := ourEntries(t, DefaultDir); len(left) > 0 {
				t.Errorf("%s still holds %v after Create", DefaultDir, left)
			}
			var st unix.Stat_t
			if err := unix.Fstat(int(seg.f.Fd()), &st); err != nil {
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
			// The memory works.
			b := seg.Bytes()
			b[0], b[len(b)-1] = 1, 2
			if b[0] != 1 || b[len(b)-1] != 2 {
				t.Error("memory does not hold writes")
			}
		})
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

// TestPrefault counts the minor page faults of touching every page of a
// fresh segment: Create (and Map, on the receiving side) must have taken
// those of the head already, and their background prefaulter all the others
// once it is done. A plain mapping of the same file is the control that
// shows the measurement can see faults. It counts the faults of its own
// thread only: the prefaulter touching the rest of the segment meanwhile,
// and the Go runtime, fault too (a count of the whole process saw 3 in
// the head once, in CI).
func TestPrefault(t *testing.T) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	const size = 16 << 20
	pages := size / os.Getpagesize()
	minflt := func() int64 {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
			t.Fatal(err)
		}
		return ru.Minflt
	}
	touch := func(b []byte) int64 {
		before := minflt()
		for i := 0; i < len(b); i += os.Getpagesize() {
			b[i]++
		}
		return minflt() - before
	}
	seg, err := Create(size, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()

	// Control: the same file mapped again without pre-faulting.
	raw, err := unix.Mmap(int(seg.f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(raw)
	// Fault-around maps up to 16 pages per read fault, hence /32.
	control := touch(raw)
	t.Logf("control: %d faults for %d pages", control, pages)
	if control < int64(pages)/32 {
		t.Fatalf("control mapping took only %d faults for %d pages: the measurement is blind", control, pages)
	}

	// The head was populated by Create itself, the rest may not be yet.
	if got := touch(seg.Bytes()[:prefaultNow]); got > 1 {
		t.Errorf("head of the created segment: %d faults for %d pages, want none", got, prefaultNow/os.Getpagesize())
	}
	<-seg.prefault.done
	if got := touch(seg.Bytes()); got > int64(pages)/256 {
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
	<-peer.prefault.done
	if got := touch(peer.Bytes()); got > int64(pages)/256 {
		t.Errorf("mapped segment: %d faults for %d pages, want (almost) none", got, pages)
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

// Close must stop the background reads of a segment before unmapping it: a
// read after the unmap would crash the process. A large segment closed at
// once is still being read when Close runs.
func TestCloseStopsPrefault(t *testing.T) {
	for i := 0; i < 4; i++ {
		seg, err := Create(64<<20, Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := seg.prefault
		if err := seg.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.done:
		default:
			t.Fatal("Close returned while the prefaulter was still reading")
		}
	}
}

// The background reads finish on their own for a segment that stays open.
func TestPrefaultFinishes(t *testing.T) {
	seg, err := Create(8<<20, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	<-seg.prefault.done
}

// Prefault does at once what the background reads have not done yet: after
// it every page is mapped, the goroutine is gone, and on a closed segment
// it does nothing.
func TestSegmentPrefault(t *testing.T) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	const size = 64 << 20 // still being read in the background when Prefault runs
	seg, err := Create(size, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seg.Prefault()
	select {
	case <-seg.prefault.done:
	default:
		t.Fatal("the background reads still run after Prefault")
	}
	var before, after unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &before); err != nil {
		t.Fatal(err)
	}
	b := seg.Bytes()
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i]++
	}
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &after); err != nil {
		t.Fatal(err)
	}
	if faults, pages := after.Minflt-before.Minflt, int64(size/os.Getpagesize()); faults > pages/256 {
		t.Errorf("after Prefault: %d faults for %d pages, want (almost) none", faults, pages)
	}
	if err := seg.Close(); err != nil {
		t.Fatal(err)
	}
	seg.Prefault()
}
