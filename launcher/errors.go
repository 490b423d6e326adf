package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Exit codes that hcclrun returns for failures that are not a rank's own code.
const (
	ExitFailure     = 1   // the launcher itself failed (I/O, control plane, ...)
	ExitUsage       = 2   // bad flags or job description
	ExitTimeout     = 124 // --timeout expired, as timeout(1) does
	ExitCannotExec  = 126 // the program exists but could not be executed
	ExitNotFound    = 127 // the program does not exist, as a shell reports it
	exitSignalsBase = 128 // 128+n: killed by, or interrupted with, signal n
)

// ErrUsage marks errors in the job description (no program, np < 1, a bad
// -x entry): the user has to change the command line.
var ErrUsage = errors.New("usage")

// usageError wraps ErrUsage around an error of its own, so that the
// message reads "np must be at least 1, got 0", errors.Is(err, ErrUsage)
// holds and the exit status is ExitUsage. The CLI and bench make theirs
// with Usagef and UsageError.
type usageError struct{ err error }

func (e *usageError) Error() string        { return e.err.Error() }
func (e *usageError) Unwrap() error        { return e.err }
func (e *usageError) Is(target error) bool { return target == ErrUsage }
func (e *usageError) ExitCode() int        { return ExitUsage }

// Usagef returns a usage error with the message fmt.Errorf makes (so %w
// wraps).
func Usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// UsageError marks err, a mistake on the command line, as a usage error.
func UsageError(err error) error { return &usageError{err: err} }

// StartError reports a rank whose program could not be started.
type StartError struct {
	Rank int
	Host string
	Path string
	Err  error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("rank %d on %s: cannot start %q: %v", e.Rank, e.Host, e.Path, innermost(e.Err))
}

// innermost strips the wrappers exec and os put around a start failure
// (`exec: "./p": stat ./p: no such file or directory`), whose path
// StartError already names, down to the reason, keeping exec's own
// sentinels ("executable file not found in $PATH").
func innermost(err error) error {
	for {
		var ee *exec.Error
		var pe *fs.PathError
		switch {
		case errors.As(err, &ee) && ee.Err != err:
			err = ee.Err
		case errors.As(err, &pe) && pe.Err != err:
			err = pe.Err
		default:
			return err
		}
	}
}

func (e *StartError) Unwrap() error { return e.Err }

// ExitCode follows the shell: 127 for a program that does not exist, 126 for
// one that cannot be executed, 1 otherwise.
func (e *StartError) ExitCode() int {
	switch {
	case errors.Is(e.Err, exec.ErrNotFound), errors.Is(e.Err, os.ErrNotExist):
		return ExitNotFound
	case errors.Is(e.Err, os.ErrPermission), errors.Is(e.Err, syscall.ENOEXEC), errors.Is(e.Err, syscall.EISDIR), errors.Is(e.Err, exec.ErrDot):
		return ExitCannotExec
	}
	return ExitFailure
}

// RankError is the failure of a job caused by one rank: the first rank that
// exited non-zero, was killed by a signal, lost its control connection
// while its process was alive, or exited with code 0 owing its peers
// something (NoClose, NoInit). Its message is the one-line summary hcclrun
// prints.
type RankError struct {
	Rank   int
	Pid    int
	Host   string
	Status ExitStatus // how the rank ended; meaningless when Lost
	// Lost is set when the rank's control connection was lost while its
	// process was still running; the launcher then killed it.
	Lost bool
	// Aborted is set when the rank aborted the job through the control
	// plane, giving Reason, and did not exit with a failure of its own.
	Aborted bool
	Reason  string
	// NoClose is set when the rank joined the job (Init) and exited with
	// code 0 without calling Close: the control plane saw its connection
	// lost, not left, and its peers could be waiting for it.
	NoClose bool
	// NoInit is set when the rank exited with code 0 without ever joining
	// the job while other ranks did: they would wait for it in Init.
	NoInit bool
	// Cause is set when this rank exited after another rank had aborted
	// the job: the rank that exited first is often a bystander reporting
	// the abort, and the summary must still say where it came from.
	Cause string
	// Err is set when the rank could not be observed any more (its host's
	// spawner failed); the launcher then does not know how it ended.
	Err error
	// Terminated counts the other ranks that were still running and were
	// signalled to stop.
	Terminated int
}

func (e *RankError) Error() string {
	cause := ""
	if e.Cause != "" {
		cause = " after " + e.Cause
	}
	return fmt.Sprintf("rank %d (pid %d on %s) %s%s; terminated %s", e.Rank, e.Pid, e.Host, e.what(), cause, others(e.Terminated))
}

// Unwrap returns Err.
func (e *RankError) Unwrap() error { return e.Err }

// what says how the rank ended: "exited with code 3".
func (e *RankError) what() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("was lost: %v", e.Err)
	case e.Lost:
		return "lost its control connection while running"
	case e.Aborted:
		return fmt.Sprintf("aborted the job: %s", e.Reason)
	case e.NoClose:
		return e.Status.String() + " without calling Close"
	case e.NoInit:
		return e.Status.String() + " without calling Init, which other ranks did"
	}
	return e.Status.String()
}

// ExitCode is the failed rank's exit code (128+n for signal n); a lost or
// aborting rank, or one that exited 0 owing its peers, gives 1, since it
// reported no failing code of its own.
func (e *RankError) ExitCode() int {
	if e.Lost || e.Aborted || e.NoClose || e.NoInit || e.Err != nil {
		return ExitFailure
	}
	return e.Status.ExitCode()
}

// TimeoutError reports a job stopped because it outlived its time limit.
type TimeoutError struct {
	Limit      time.Duration
	Terminated int // ranks still running when the limit expired
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("job timed out after %v; terminated %s", e.Limit, ranks(e.Terminated))
}

// ExitCode is 124, as timeout(1) returns.
func (e *TimeoutError) ExitCode() int { return ExitTimeout }

// InterruptError reports a job stopped because the launcher received a
// signal (SIGINT, SIGTERM), which it forwarded to every rank.
type InterruptError struct {
	Signal     syscall.Signal
	Terminated int  // ranks still running when the signal arrived
	Killed     bool // a second SIGINT asked for SIGKILL at once
}

func (e *InterruptError) Error() string {
	how := "forwarded it to"
	if e.Killed {
		how = "killed"
	}
	return fmt.Sprintf("interrupted by %s; %s %s", SignalName(e.Signal), how, ranks(e.Terminated))
}

// ExitCode is 128+n for signal n, as a shell reports a job it interrupted.
func (e *InterruptError) ExitCode() int { return exitSignalsBase + int(e.Signal) }

// OutputError reports a job stopped because the launcher could not write
// the ranks' output any more, typically because stdout is a pipe whose
// reader exited.
type OutputError struct {
	Terminated int
	Err        error
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("writing the ranks' output: %v; terminated %s", e.Err, ranks(e.Terminated))
}

func (e *OutputError) Unwrap() error { return e.Err }

// ExitCode is 141 (128+SIGPIPE) for a closed pipe, as a shell reports a
// pipeline stage killed by SIGPIPE, and 1 otherwise.
func (e *OutputError) ExitCode() int {
	if errors.Is(e.Err, syscall.EPIPE) {
		return exitSignalsBase + int(syscall.SIGPIPE)
	}
	return ExitFailure
}

// ExitCode maps an error returned by this package to the exit code hcclrun
// returns: 0 for nil, the code an error carries (RankError, TimeoutError,
// InterruptError, StartError, usage errors), and 1 for anything else.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var c interface{ ExitCode() int }
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	return ExitFailure
}

func others(n int) string {
	if n == 1 {
		return "1 other rank"
	}
	return fmt.Sprintf("%d other ranks", n)
}

func ranks(n int) string {
	if n == 1 {
		return "1 rank"
	}
	return fmt.Sprintf("%d ranks", n)
}
