package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A launcher killed with -9 cannot remove its rank table's directory; the
// next launcher on the host sweeps such directories. Whether one is stale
// is told by a lock, not by its name's pid: each directory holds a lock
// file that its launcher (or agent) keeps locked (flock) for as long as the
// directory exists, and the kernel drops the lock when that process dies,
// however it dies. A pid says nothing across PID namespaces (containers, or
// the test harness's hosts, sharing /tmp): kill(pid, 0) there found a live
// launcher's pid free and deleted its table under its running ranks.
//
// A directory whose lock the sweep takes is removed only if it holds the
// lock file and the table and nothing else. Its launcher writes the table
// only once it holds the lock, so a sweep that takes the lock in the moment
// between the lock file's creation and its locking finds no table and
// leaves the directory alone. Directories without a lock file (of older
// launchers, or not ours) are never touched.

// tableDirPrefix starts the name of a staged table's directory, followed by
// the launcher's pid: "hcclrun-1234-567890".
const tableDirPrefix = "hcclrun-"

// agentTableDirPrefix starts the name of an agent's table directory,
// followed by the host name and the agent's pid; the launcher's sweep of
// tableDirPrefix directories skips it (no pid follows "hcclrun-").
const agentTableDirPrefix = "hcclrun-agent-"

// tableFileName is the staged table's name in its directory.
const tableFileName = "ranktable.json"

// lockFileName is the lock file's name in a table's directory.
const lockFileName = "lock"

// lockTableDir creates dir's lock file and locks it. The lock lasts as long
// as the returned file is open (it is close-on-exec: no rank holds it). It
// waits for a sweep that took the lock to look at the directory.
func lockTableDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return f, nil
}

// sweepStaleTables removes the table directories under tmp named with
// prefix whose lock nobody holds. It is best effort.
func sweepStaleTables(tmp, prefix string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, prefix+"*-*"))
	for _, d := range dirs {
		// Exactly "<pid>-<digits>" after the prefix (MkdirTemp's suffix is
		// digits): "hcclrun-agent-node-" must not take "node-1"'s.
		rest := strings.TrimPrefix(filepath.Base(d), prefix)
		pidText, suffix, _ := strings.Cut(rest, "-")
		_, perr := strconv.ParseUint(pidText, 10, 64)
		_, serr := strconv.ParseUint(suffix, 10, 64)
		if perr != nil || serr != nil {
			continue // not one of ours
		}
		removeIfStale(d)
	}
}

// removeIfStale removes the table directory d if its lock can be taken.
func removeIfStale(d string) {
	f, err := os.OpenFile(filepath.Join(d, lockFileName), os.O_RDWR, 0)
	if err != nil {
		return // no lock file: not ours to judge
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return // its launcher lives
	}
	names, err := os.ReadDir(d)
	if err != nil || len(names) != 2 {
		return
	}
	for _, n := range names {
		if n.Name() != lockFileName && n.Name() != tableFileName {
			return
		}
	}
	os.RemoveAll(d)
}
