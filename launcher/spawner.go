package launcher

import (
	"io"
	"syscall"
)

// Spawner starts the ranks of one job on one host. Run calls StageRankTable
// once, then Start once per rank placed on the host, possibly from several
// goroutines, and Close once after every Process it started has been waited
// for. LocalSpawner starts ranks on this machine; a spawner that drives a
// remote agent implements the same contract on another host.
type Spawner interface {
	// Host names the host in summaries ("rank 2 (pid 1234 on vm)").
	Host() string

	// StageRankTable stores the job's rank table where the ranks of this
	// host can read it, readable only by the job's user (mode 0600 in a
	// private directory), and returns its path as those ranks see it.
	StageRankTable(table []byte) (path string, err error)

	// Start starts one rank. The process runs in a process group of its own
	// (so that Signal reaches its children too) and dies when the spawner's
	// host loses the launcher. Start returns once the process exists, or an
	// error (a *StartError when the program could not be executed).
	Start(spec ProcSpec) (Process, error)

	// Close removes what StageRankTable created and releases the host. It
	// is called after every Process's Wait has returned.
	Close() error
}

// ProcSpec is what a Spawner needs to start one rank.
type ProcSpec struct {
	Rank int      // the global rank, for error messages
	Path string   // program: a path, or a name looked up in the host's PATH
	Args []string // arguments after the program name, passed untouched
	Dir  string   // working directory; "" inherits the spawner's

	// Env holds the variables the rank gets on top of the host's own
	// environment, as "NAME=value"; a later entry overrides an earlier
	// one and the host's. It contains HCCL_JOB_KEY: never log it.
	Env []string

	// CPUs, when not empty, are the CPUs the rank is bound to (bind.go).
	CPUs []int

	// Stdin feeds the rank's standard input; nil gives it /dev/null. The
	// spawner reads it until EOF or until the rank exits, whichever comes
	// first, and closes the rank's end then.
	Stdin io.Reader

	// Stdout and Stderr receive the rank's output in the order it was
	// written, in chunks of any size. They are never written after Wait
	// returns. Each is used by one goroutine at a time.
	Stdout, Stderr io.Writer
}

// Process is a running rank.
type Process interface {
	// Pid is the process id on its host (also its process group id).
	Pid() int

	// Signal delivers sig to the rank's process group. After the rank has
	// exited it does nothing and returns nil, so that a late signal never
	// reaches a recycled process id.
	Signal(sig syscall.Signal) error

	// Wait blocks until the rank has exited, whatever it left behind in its
	// process group has been killed and its output has been delivered. It is
	// called once. The error reports a failure to observe the rank (e.g. the
	// connection to its host was lost), not a failure of the rank.
	Wait() (ExitStatus, error)
}
