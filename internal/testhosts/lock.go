package testhosts

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The hosts are one shared machine-wide resource, and `go test ./...` runs the test
// binaries of different packages at the same time: one package's test crashing h2
// would break another's test running on h2. So Require holds an exclusive flock on
// the harness state directory for the whole test. Within one test binary the lock is
// shared (counted), so subtests and parallel tests of one package do not deadlock.

const lockWait = 5 * time.Minute

var lockState struct {
	mu   sync.Mutex
	f    *os.File
	refs int
}

// lock takes the harness lock for t and releases it in t's cleanup.
func lock(t testing.TB, state string) error {
	lockState.mu.Lock()
	defer lockState.mu.Unlock()
	if lockState.refs == 0 {
		f, err := os.OpenFile(filepath.Join(state, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("harness lock: %w", err)
		}
		deadline := time.Now().Add(lockWait)
		for {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
			if err == nil {
				break
			}
			if err != unix.EWOULDBLOCK || time.Now().After(deadline) {
				f.Close()
				return fmt.Errorf("harness lock %s: %w (held by another test binary for over %v)", f.Name(), err, lockWait)
			}
			time.Sleep(20 * time.Millisecond)
		}
		lockState.f = f
	}
	lockState.refs++
	t.Cleanup(unlock)
	return nil
}

func unlock() {
	lockState.mu.Lock()
	defer lockState.mu.Unlock()
	lockState.refs--
	if lockState.refs == 0 {
		lockState.f.Close() // releases the flock
		lockState.f = nil
	}
}
