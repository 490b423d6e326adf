package shm

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// DefaultDir is the tmpfs segments are created in.
const DefaultDir = "/dev/shm"

// NamePrefix, followed by the creator's pid, starts the name of a file this
// package creates where the tmpfs has no O_TMPFILE (createAnonymous), so
// that a test (or an operator) can tell ours from anyone else's. Such a
// name that outlives a few microseconds is a bug.
const NamePrefix = "hcclrun-"

// Options configure Create. The zero value is ready to use.
type Options struct {
	// Dir is the tmpfs to create the file in; "" means DefaultDir.
	Dir string
	// FreeSpace reports free bytes in Dir; nil means StatfsFree. Tests
	// inject a fake to exercise the "not enough space" path.
	FreeSpace FreeSpaceFunc
	// Lazy leaves the page tables to fill at each page's first touch
	// instead of populating them at once (prefault.go): for segments of
	// which a user may touch only the first pages, such as the small rings
	// of a link that carries a Barrier, on a host where CPU time is what
	// is scarce. Prefault still reads them all.
	Lazy bool
}

// Segment is a mapped shared-memory file whose name is already gone. It is
// safe for concurrent use; Close must not race with users of Bytes.
type Segment struct {
	mu   sync.Mutex
	f    *os.File // descriptor to pass to peers; nil after Close or for received segments
	mem  []byte   // the MAP_SHARED mapping; nil after Close
	lazy bool     // page tables not populated yet (Options.Lazy)
	read bool     // every page read once (Prefault)
}

// Create makes a segment of at least size bytes (rounded up to whole pages),
// with every page allocated in the tmpfs and, unless opt.Lazy, in this
// process's page tables.
// It fails with a *SpaceError (errors.Is ErrNoSpace) when the tmpfs is too
// small.
func Create(size int, opt Options) (*Segment, error) {
	if size <= 0 {
		return nil, fmt.Errorf("shm: create segment of %d bytes", size)
	}
	size = roundUp(size, os.Getpagesize())
	dir := opt.Dir
	if dir == "" {
		dir = DefaultDir
	}
	if err := CheckSpace(dir, uint64(size), opt.FreeSpace); err != nil {
		return nil, err
	}
	fd, path, err := createAnonymous(dir)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	if err := unix.Fallocate(fd, 0, 0, int64(size)); err != nil {
		f.Close()
		if errors.Is(err, unix.ENOSPC) {
			// Another job (or rank) took the space since CheckSpace.
			free, _ := freeOrZero(dir, opt.FreeSpace)
			return nil, &SpaceError{Dir: dir, Free: free, Need: uint64(size)}
		}
		return nil, fmt.Errorf("shm: fallocate %d bytes in %s: %w", size, dir, err)
	}
	mem, err := mapShared(fd, size)
	if err != nil {
		f.Close()
		return nil, err
	}
	return newSegment(f, mem, opt.Lazy), nil
}

// newSegment wraps a fresh mapping, populating its page tables unless lazy.
func newSegment(f *os.File, mem []byte, lazy bool) *Segment {
	if !lazy {
		populate(mem)
	}
	return &Segment{f: f, mem: mem, lazy: lazy}
}

// createAnonymous opens a fresh file of ours in dir that has no name:
// O_TMPFILE creates it unlinked from the start, so a process killed at any
// moment leaves nothing in dir, and O_EXCL forbids linking it into dir
// later. The returned path only labels the descriptor.
func createAnonymous(dir string) (fd int, path string, err error) {
	fd, err = unix.Open(dir, tmpfileFlag|unix.O_RDWR|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	switch {
	case err == nil:
		return fd, dir, nil
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EISDIR), errors.Is(err, unix.EINVAL):
		// The file system has no O_TMPFILE (EOPNOTSUPP), or the kernel
		// predates it and saw only O_DIRECTORY (EISDIR) or refused the
		// combination (EINVAL): fall back to a name that lives from the
		// open to the unlink, a window in which a kill leaves it behind.
		return createUnlinked(dir)
	}
	return -1, "", fmt.Errorf("shm: create an unnamed file in %s: %w", dir, err)
}

// tmpfileFlag is O_TMPFILE; a test sets it to O_DIRECTORY alone, which is
// what a kernel without O_TMPFILE sees, to take the fallback.
var tmpfileFlag = unix.O_TMPFILE

// createUnlinked is createAnonymous's fallback: a fresh file under a name
// with our pid (NamePrefix), removed right after the open. O_EXCL makes
// sure we never open (and later hand to a peer) a file someone planted
// under the name we chose.
func createUnlinked(dir string) (fd int, path string, err error) {
	for attempt := 0; attempt < 8; attempt++ {
		var rnd [8]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return -1, "", fmt.Errorf("shm: segment name: %w", err)
		}
		path = filepath.Join(dir, NamePrefix+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(rnd[:]))
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return -1, "", fmt.Errorf("shm: create %s: %w", path, err)
		}
		if err := unix.Unlink(path); err != nil {
			unix.Close(fd)
			return -1, "", fmt.Errorf("shm: unlink %s: %w", path, err)
		}
		return fd, path, nil
	}
	return -1, "", fmt.Errorf("shm: create segment in %s: names keep colliding", dir)
}

func freeOrZero(dir string, free FreeSpaceFunc) (uint64, error) {
	if free == nil {
		free = StatfsFree
	}
	return free(dir)
}

// mapShared maps fd read-write and shared.
func mapShared(fd, size int) ([]byte, error) {
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: mmap %d bytes: %w", size, err)
	}
	return mem, nil
}

// Map maps a segment from a descriptor received from a peer and populates
// its page tables, as Create does. It takes ownership of f (closing it once
// mapped: the mapping keeps the file alive).
func Map(f *os.File) (*Segment, error) { return mapFile(f, false) }

// mapFile is Map, with the page tables left to fill at each page's first
// touch when lazy (Options.Lazy).
func mapFile(f *os.File, lazy bool) (*Segment, error) {
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("shm: fstat received segment: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size <= 0 {
		return nil, fmt.Errorf("shm: received descriptor is not a sized regular file (mode %#o, %d bytes)", st.Mode, st.Size)
	}
	mem, err := mapShared(int(f.Fd()), int(st.Size))
	if err != nil {
		return nil, err
	}
	return newSegment(nil, mem, lazy), nil
}

// Bytes returns the mapped memory. It is valid until Close.
func (s *Segment) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mem
}

// Prefault reads every page of the mapping once, in the caller's
// goroutine, so that none costs a trap to the hypervisor afterwards
// (prefault.go). It does nothing the second time, or after Close.
func (s *Segment) Prefault() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem == nil || s.read {
		return
	}
	populate(s.mem)
	touchPages(s.mem)
	s.lazy, s.read = false, true
}

// ReadAhead populates the page tables of a segment received lazily
// (Receive), as Create and Map do. It does nothing to a segment already
// populated, or after Close.
func (s *Segment) ReadAhead() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem != nil && s.lazy {
		populate(s.mem)
		s.lazy = false
	}
}

// Size returns the mapped length in bytes, 0 after Close.
func (s *Segment) Size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mem)
}

// Close unmaps the segment and closes its descriptor. The memory is freed
// when the last process unmaps it. Close is idempotent.
func (s *Segment) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.mem != nil {
		if err := unix.Munmap(s.mem); err != nil {
			errs = append(errs, fmt.Errorf("shm: munmap: %w", err))
		}
		s.mem = nil
	}
	if s.f != nil {
		if err := s.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("shm: close segment: %w", err))
		}
		s.f = nil
	}
	return errors.Join(errs...)
}

func roundUp(n, to int) int { return (n + to - 1) / to * to }
