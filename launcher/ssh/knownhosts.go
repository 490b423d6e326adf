package ssh

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// hostKeys checks server keys against one set of known_hosts files. The first file is
// the one accept-new appends to; after an append the database is read again, so other
// connections see the key at once.
type hostKeys struct {
	files     []string
	acceptNew bool
	log       *slog.Logger

	mu sync.Mutex // serializes appends and swaps of cb
	cb xssh.HostKeyCallback
}

func newHostKeys(files []string, acceptNew bool, log *slog.Logger) (*hostKeys, error) {
	h := &hostKeys{files: files, acceptNew: acceptNew, log: log}
	if err := h.reload(); err != nil {
		return nil, err
	}
	return h, nil
}

// reload rereads the files; missing ones count as empty (a first connection on a
// fresh account has no ~/.ssh/known_hosts yet). Called with mu held or before sharing.
func (h *hostKeys) reload() error {
	var present []string
	for _, f := range h.files {
		if _, err := os.Stat(f); err == nil {
			present = append(present, f)
		} else if !os.IsNotExist(err) {
			return fmt.Errorf("known_hosts: %w", err)
		}
	}
	cb, err := knownhosts.New(present...)
	if err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	h.cb = cb
	return nil
}

func (h *hostKeys) current() xssh.HostKeyCallback {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cb
}

// probeKey is a key no known_hosts line holds: checking it makes knownhosts report,
// in KeyError.Want, every key it does hold for an address.
var probeKey = func() xssh.PublicKey {
	k, err := xssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	if err != nil {
		panic(err)
	}
	return k
}()

// known returns the keys known_hosts holds for addr ("host:port").
func (h *hostKeys) known(addr string) []knownhosts.KnownKey {
	err := h.current()(addr, &net.TCPAddr{IP: net.IPv4zero}, probeKey)
	var ke *knownhosts.KeyError
	if errors.As(err, &ke) {
		return ke.Want
	}
	return nil
}

// algorithms lists the host key algorithms to ask the server for: those of the keys
// known_hosts holds for addr. Without this the server picks its preferred type (say
// ed25519) and a host known by its ecdsa key would look "changed". For a host not
// known yet, OpenSSH's order of preference, so accept-new records the key that ssh
// itself would ask for (the library's default puts ecdsa first).
func (h *hostKeys) algorithms(addr string) []string {
	var algos []string
	seen := map[string]bool{}
	add := func(a ...string) {
		for _, x := range a {
			if !seen[x] {
				seen[x] = true
				algos = append(algos, x)
			}
		}
	}
	for _, k := range h.known(addr) {
		switch t := k.Key.Type(); t {
		case xssh.KeyAlgoRSA:
			add(xssh.KeyAlgoRSASHA512, xssh.KeyAlgoRSASHA256, xssh.KeyAlgoRSA)
		default:
			add(t)
		}
	}
	if len(algos) == 0 {
		return newHostAlgorithms
	}
	return algos
}

var newHostAlgorithms = []string{
	xssh.KeyAlgoED25519, xssh.KeyAlgoECDSA256, xssh.KeyAlgoECDSA384, xssh.KeyAlgoECDSA521,
	xssh.KeyAlgoSKED25519, xssh.KeyAlgoSKECDSA256, xssh.KeyAlgoRSASHA512, xssh.KeyAlgoRSASHA256,
}

// callback returns the HostKeyCallback for t. It stores the precise failure in *failed
// because the ssh library flattens it into "ssh: handshake failed: ...".
func (h *hostKeys) callback(t Target, failed *error) xssh.HostKeyCallback {
	return func(_ string, remote net.Addr, key xssh.PublicKey) error {
		addr := t.hostKeyAddr()
		err := h.current()(addr, remote, key)
		if err == nil {
			return nil
		}
		var ke *knownhosts.KeyError
		var re *knownhosts.RevokedError
		switch {
		case errors.As(err, &ke) && len(ke.Want) == 0 && h.acceptNew:
			err = h.appendKey(t, key)
		case errors.As(err, &ke) && len(ke.Want) == 0:
			err = h.unknownError(t, key)
		case errors.As(err, &ke):
			err = h.changedError(t, key, ke.Want)
		case errors.As(err, &re):
			err = &Error{Op: "dial", Target: t.String(), Kind: ErrHostKeyChanged,
				Err:  fmt.Errorf("the key %s %s is marked @revoked in known_hosts %s:%d", key.Type(), xssh.FingerprintSHA256(key), re.Revoked.Filename, re.Revoked.Line),
				Hint: "the host must get a new key"}
		default:
			err = &Error{Op: "dial", Target: t.String(), Kind: ErrHostKeyChanged, Err: err}
		}
		if err != nil {
			*failed = err
		}
		return err
	}
}

func keyscanHint(t Target, file string) string {
	port := ""
	if t.Port != 22 {
		port = fmt.Sprintf("-p %d ", t.Port)
	}
	return fmt.Sprintf("check the fingerprint, then add the key with: ssh-keyscan -H %s%s >> %s, or run again with --ssh-accept-new", port, t.HostKeyName, file)
}

func (h *hostKeys) unknownError(t Target, key xssh.PublicKey) error {
	return &Error{Op: "dial", Target: t.String(), Kind: ErrHostKeyUnknown,
		Err: fmt.Errorf("no key for %s in known_hosts (%s); the server offered %s %s",
			knownhosts.Normalize(t.hostKeyAddr()), strings.Join(h.files, ", "), key.Type(), xssh.FingerprintSHA256(key)),
		Hint: keyscanHint(t, h.files[0])}
}

func (h *hostKeys) changedError(t Target, key xssh.PublicKey, want []knownhosts.KnownKey) error {
	w := want[0]
	return &Error{Op: "dial", Target: t.String(), Kind: ErrHostKeyChanged,
		Err: fmt.Errorf("the server offered %s %s but known_hosts %s:%d holds %s %s for %s: someone may be intercepting the connection, or the host was reinstalled",
			key.Type(), xssh.FingerprintSHA256(key), w.Filename, w.Line, w.Key.Type(), xssh.FingerprintSHA256(w.Key), knownhosts.Normalize(t.hostKeyAddr())),
		Hint: fmt.Sprintf("if the change is expected, remove the old key with: ssh-keygen -R %s -f %s, then connect again (--ssh-accept-new does not replace changed keys)",
			knownhosts.Normalize(t.hostKeyAddr()), w.Filename)}
}

// appendKey records a new host's key in the first known_hosts file, hashed as
// OpenSSH's HashKnownHosts does, unless a concurrent dial to the same host got there
// first (then the key must match what it wrote).
func (h *hostKeys) appendKey(t Target, key xssh.PublicKey) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	addr := t.hostKeyAddr()
	if err := h.cb(addr, &net.TCPAddr{IP: net.IPv4zero}, key); err == nil {
		return nil
	} else if ke := (*knownhosts.KeyError)(nil); errors.As(err, &ke) && len(ke.Want) > 0 {
		return h.changedError(t, key, ke.Want)
	}
	file := h.files[0]
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return &Error{Op: "dial", Target: t.String(), Kind: ErrHostKeyUnknown, Err: fmt.Errorf("accept-new: %w", err)}
	}
	line := knownhosts.HashHostname(knownhosts.Normalize(addr)) + " " + string(xssh.MarshalAuthorizedKey(key))
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err == nil {
		_, err = f.WriteString(line)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = h.reload()
	}
	if err != nil {
		return &Error{Op: "dial", Target: t.String(), Kind: ErrHostKeyUnknown, Err: fmt.Errorf("accept-new: known_hosts %s: %w", file, err)}
	}
	h.log.Warn("permanently added host key to known_hosts", "host", t.String(), "key", key.Type()+" "+xssh.FingerprintSHA256(key), "file", file)
	return nil
}
