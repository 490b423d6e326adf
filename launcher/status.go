package launcher

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExitStatus is how a rank process ended: it either exited with Code, or was
// killed by Signal (then Code is -1).
type ExitStatus struct {
	Code   int
	Signal syscall.Signal
}

// Exited returns the status of a process that exited with code.
func Exited(code int) ExitStatus { return ExitStatus{Code: code} }

// Signaled returns the status of a process killed by sig.
func Signaled(sig syscall.Signal) ExitStatus { return ExitStatus{Code: -1, Signal: sig} }

// statusOf converts a wait status as the kernel reports it. A stopped or
// continued status never reaches here: only exits are waited for.
func statusOf(ws syscall.WaitStatus) ExitStatus {
	if ws.Signaled() {
		return Signaled(ws.Signal())
	}
	return Exited(ws.ExitStatus())
}

// Success reports whether the process exited with code 0.
func (s ExitStatus) Success() bool { return s.Signal == 0 && s.Code == 0 }

// ExitCode is the code a shell would report for the process: its exit code,
// or 128+n when signal n killed it.
func (s ExitStatus) ExitCode() int {
	if s.Signal != 0 {
		return 128 + int(s.Signal)
	}
	return s.Code
}

// String describes the status as a summary phrase: "exited with code 3",
// "killed by SIGKILL (signal 9)".
func (s ExitStatus) String() string {
	if s.Signal != 0 {
		return fmt.Sprintf("killed by %s (signal %d)", SignalName(s.Signal), int(s.Signal))
	}
	return fmt.Sprintf("exited with code %d", s.Code)
}

// SignalName returns the conventional name of sig ("SIGTERM"), or
// "signal N" for a number the system does not name.
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
