package wire

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
)

// KeySize is the length in bytes of a job key made by NewKey.
const KeySize = 32

// MinKeySize is the shortest key Handshake accepts: anything shorter is a
// configuration mistake (an empty HCCL_JOB_KEY would make the MAC a public
// function), not a key.
const MinKeySize = 16

// Key is a per-job secret. It is a byte slice, so it can be passed wherever
// a []byte key is asked for, but it formats as "[redacted]" under every fmt
// verb and in slog, so that logging a struct that holds one does not leak it.
// Use EncodeKey to obtain the hex text on purpose (for HCCL_JOB_KEY).
type Key []byte

// Format implements fmt.Formatter: every verb prints "[redacted]".
func (Key) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte("[redacted]")) }

// String returns "[redacted]", never the key.
func (Key) String() string { return "[redacted]" }

// GoString returns "[redacted]", never the key.
func (Key) GoString() string { return "[redacted]" }

// LogValue implements slog.LogValuer: the key logs as "[redacted]".
func (Key) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// NewKey returns KeySize bytes from the operating system's CSPRNG.
func NewKey() (Key, error) {
	k := make(Key, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("wire: new job key: %w", err)
	}
	return k, nil
}

// EncodeKey returns k as lowercase hex, the form carried in HCCL_JOB_KEY.
// The result is the secret itself: pass it to a child's environment, never
// to a log.
func EncodeKey(k []byte) string { return hex.EncodeToString(k) }

// ErrBadKey reports a job key that is not KeySize bytes of hex.
var ErrBadKey = errors.New("wire: bad job key")

// ParseKey decodes the hex text of a job key (as EncodeKey writes it). It
// requires exactly KeySize bytes. The error never quotes the text, since a
// nearly valid key is still nearly the secret.
func ParseKey(s string) (Key, error) {
	if len(s) != 2*KeySize {
		return nil, fmt.Errorf("%w: %d hex digits, want %d", ErrBadKey, len(s), 2*KeySize)
	}
	k, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: not hex", ErrBadKey)
	}
	return Key(k), nil
}
