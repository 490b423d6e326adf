package shmlink

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// A rank listens on the abstract unix socket "@hcclrun/<jobID>/<rank>/<tag>",
// the tag 128 random bits in hex. Abstract sockets have no permissions and
// /proc/net/unix lists every bound name with its job id, so a name that
// another local user could work out before the rank binds it could be
// taken first; with the tag that is a guess of 2^128. The name therefore
// cannot be derived by the dialer either: the runtime publishes
// Listener.Addr through the authenticated control plane, as it does the
// TCP endpoint, and Dial connects only to a name of its own job and peer.

// ErrNameTaken is returned by Listen when another socket already holds the
// name: a process that guessed it (or was given the tag), never a rank of
// a healthy job. The runtime then reaches the rank over TCP.
var ErrNameTaken = errors.New("shmlink: socket name taken by another process")

// tagBytes is the randomness of a socket name's tag.
const tagBytes = 16

// maxName is the longest abstract name: sun_path is 108 bytes, the first of
// them the NUL that Go writes for the leading '@'.
const maxName = 107

// maxTag bounds a tag that ListenConfig.Tag sets, so that a long one cannot
// crowd out the job id.
const maxTag = 64

func randomTag() string {
	b := make([]byte, tagBytes)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// socketName is the name rank of job jobID listens on with tag. The leading
// '@' makes Go use the abstract namespace: no file, nothing to clean up.
func socketName(jobID string, rank int, tag string) (string, error) {
	if err := checkJobID(jobID); err != nil {
		return "", err
	}
	if rank < 0 {
		return "", fmt.Errorf("shmlink: rank %d", rank)
	}
	if err := checkTag(tag); err != nil {
		return "", err
	}
	name := fmt.Sprintf("@hcclrun/%s/%d/%s", jobID, rank, tag)
	if len(name) > maxName {
		return "", fmt.Errorf("shmlink: job id of %d bytes makes the socket name of rank %d %d bytes long, more than sun_path's %d", len(jobID), rank, len(name), maxName)
	}
	return name, nil
}

func checkJobID(jobID string) error {
	if jobID == "" {
		return errors.New("shmlink: empty job id")
	}
	if strings.ContainsAny(jobID, "/\x00") {
		return fmt.Errorf("shmlink: job id %q contains '/' or NUL", jobID)
	}
	return nil
}

func checkTag(tag string) error {
	if tag == "" || len(tag) > maxTag {
		return fmt.Errorf("shmlink: socket tag of %d bytes, want 1 to %d", len(tag), maxTag)
	}
	for _, c := range tag {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return fmt.Errorf("shmlink: socket tag %q: want letters, digits, '-' and '_'", tag)
		}
	}
	return nil
}

// checkAddr is the dialer's check of the name that peer published: it must
// be one of peer's names in job jobID, so that a bad value on the control
// plane cannot send the segment of a link anywhere else.
func checkAddr(addr, jobID string, peer int) error {
	if err := checkJobID(jobID); err != nil {
		return err
	}
	if addr == "" {
		return fmt.Errorf("rank %d has no shared-memory socket", peer)
	}
	tag, ok := strings.CutPrefix(addr, fmt.Sprintf("@hcclrun/%s/%d/", jobID, peer))
	if !ok || checkTag(tag) != nil || len(addr) > maxName {
		return fmt.Errorf("socket name %q is not one of rank %d of job %s", addr, peer, jobID)
	}
	return nil
}
