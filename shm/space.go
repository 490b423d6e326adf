package shm

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ErrNoSpace reports a tmpfs without room for the segments a job needs. The
// error that wraps it is a *SpaceError with the figures.
var ErrNoSpace = errors.New("shm: not enough shared memory")

// FreeSpaceFunc reports the bytes available to an unprivileged writer in the
// file system that holds dir. Tests inject one to fake a small tmpfs.
type FreeSpaceFunc func(dir string) (uint64, error)

// StatfsFree is the default FreeSpaceFunc: statfs(2), available blocks
// times block size.
func StatfsFree(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("shm: statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// SpaceError says how much is free and how much is needed, in a message an
// operator can act on.
type SpaceError struct {
	Dir  string // the tmpfs, e.g. /dev/shm
	Free uint64 // bytes free when checked
	Need uint64 // bytes the job needs
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("%s has %s free, this job needs %s: enlarge it or lower HCCL_BUFFSIZE",
		e.Dir, formatBytes(e.Free), formatBytes(e.Need))
}

// Unwrap makes errors.Is(err, ErrNoSpace) true.
func (e *SpaceError) Unwrap() error { return ErrNoSpace }

// CheckSpace fails with a *SpaceError when dir has less than need bytes
// free. The runtime calls it once with the total of all the segments a rank
// will create, before creating any, so that a small /dev/shm is reported
// up front rather than after half the links are open. free may be nil
// (StatfsFree).
func CheckSpace(dir string, need uint64, free FreeSpaceFunc) error {
	if free == nil {
		free = StatfsFree
	}
	have, err := free(dir)
	if err != nil {
		return err
	}
	if have < need {
		return &SpaceError{Dir: dir, Free: have, Need: need}
	}
	return nil
}

// formatBytes prints n in the largest binary unit that keeps it readable;
// MiB for the sizes operators give tmpfs.
func formatBytes(n uint64) string {
	const (
		kib = 1 << 10
		mib = 1 << 20
		gib = 1 << 30
	)
	switch {
	case n >= 10*gib:
		return fmt.Sprintf("%d GiB", n/gib)
	case n >= mib:
		return fmt.Sprintf("%d MiB", n/mib)
	case n >= kib:
		return fmt.Sprintf("%d KiB", n/kib)
	}
	return fmt.Sprintf("%d bytes", n)
}
