package control

import (
	"errors"
	"fmt"
)

// LauncherOrigin is the Rank of an AbortError raised by the launcher
// rather than by a rank.
const LauncherOrigin = -1

// AbortError is the error of every call, and Client.Err, after the job was
// aborted: by rank Rank calling Client.Abort, or by the launcher
// (Rank == LauncherOrigin) calling Server.Abort.
type AbortError struct {
	Rank   int
	Reason string
}

func (e *AbortError) Error() string {
	if e.Rank == LauncherOrigin {
		return "control: job aborted by the launcher: " + e.Reason
	}
	return fmt.Sprintf("control: job aborted by rank %d: %s", e.Rank, e.Reason)
}

// ErrLost is wrapped by Client.Err when the connection to the server broke
// or the server fell silent for LostAfter: the launcher is gone or cut off.
var ErrLost = errors.New("lost the control server")

// ErrClosed is Client.Err after Client.Close, and the error of calls made
// after it.
var ErrClosed = errors.New("control: client closed")

// ErrRefused is wrapped by Dial's error when the server turned the rank
// away (rank out of range, world size mismatch, rank already joined).
var ErrRefused = errors.New("refused by the control server")
