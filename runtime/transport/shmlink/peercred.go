package shmlink

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// Both ends of a set-up check who is at the other end before anything else
// (SO_PEERCRED: the credentials the kernel recorded at connect, or at
// listen for the dialer's view, which the peer cannot forge). Ranks of one
// job run as one user; a connection from another user is refused before
// it costs a handshake, a goroutine or a slot among the set-ups in
// progress, and a dialer never hands its segment to another user's
// socket. The key would stop a stranger anyway; this keeps one from
// costing the job anything.

// peerCred returns the credentials of the process at the other end of c.
func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return cred, nil
}

// foreignUser is a peer that runs as another user than this process.
type foreignUser struct {
	uid, pid int
}

func (e *foreignUser) Error() string {
	return fmt.Sprintf("another user: uid %d (pid %d), this job runs as uid %d", e.uid, e.pid, os.Geteuid())
}

// checkPeerUser returns a *foreignUser error unless the process at the
// other end of c has this process's effective uid.
func checkPeerUser(c *net.UnixConn) error {
	cred, err := peerCred(c)
	if err != nil {
		return err
	}
	if int(cred.Uid) != os.Geteuid() {
		return &foreignUser{uid: int(cred.Uid), pid: int(cred.Pid)}
	}
	return nil
}
