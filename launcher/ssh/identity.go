package ssh

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// identity is one key we can offer, with where it came from for error messages.
type identity struct {
	signer xssh.Signer
	source string // file path or "ssh-agent"
}

func (id identity) String() string {
	k := id.signer.PublicKey()
	return fmt.Sprintf("%s (%s %s)", id.source, k.Type(), xssh.FingerprintSHA256(k))
}

// identities loads key files once, however many hosts use them.
type identities struct {
	log    *slog.Logger
	agent  agent.ExtendedAgent // nil without SSH_AUTH_SOCK
	conn   net.Conn            // the agent connection, closed by close
	mu     sync.Mutex
	byPath map[string]xssh.Signer
}

func newIdentities(log *slog.Logger) *identities {
	ids := &identities{log: log, byPath: map[string]xssh.Signer{}}
	if sock := agentSocket(); sock != "" {
		c, err := net.Dial("unix", sock)
		if err != nil {
			log.Warn("ssh-agent not reachable, using key files only", "SSH_AUTH_SOCK", sock, "err", err)
		} else {
			ids.conn, ids.agent = c, agent.NewClient(c)
		}
	}
	return ids
}

func (ids *identities) close() {
	if ids.conn != nil {
		ids.conn.Close()
	}
}

// load parses a private key file. Encrypted keys cannot be used without a prompt, so
// they are an error that says to put them into ssh-agent.
func (ids *identities) load(path string) (xssh.Signer, error) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if s, ok := ids.byPath[path]; ok {
		return s, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	s, err := xssh.ParsePrivateKey(b)
	var pp *xssh.PassphraseMissingError
	if errors.As(err, &pp) {
		return nil, fmt.Errorf("identity %s is passphrase-protected: load it into ssh-agent (ssh-add %s) and set SSH_AUTH_SOCK", path, path)
	}
	if err != nil {
		return nil, fmt.Errorf("identity %s: %w", path, err)
	}
	ids.byPath[path] = s
	return s, nil
}

// forTarget lists the keys to offer to t, in OpenSSH's order: the explicit identity or
// the config's IdentityFile entries or the default files, then the agent's keys.
// Default files that do not exist are skipped silently, configured ones with a warning
// (as OpenSSH does); an explicit --ssh-identity must load.
func (ids *identities) forTarget(explicit string, t Target) ([]identity, error) {
	var out []identity
	switch {
	case explicit != "":
		s, err := ids.load(explicit)
		if err != nil {
			return nil, err
		}
		out = append(out, identity{s, explicit})
	case len(t.IdentityFiles) > 0:
		for _, p := range t.IdentityFiles {
			s, err := ids.load(p)
			if err != nil {
				ids.log.Warn("skipping identity from ssh config", "host", t.Alias, "err", err)
				continue
			}
			out = append(out, identity{s, p})
		}
	default:
		home, err := homeDir()
		if err == nil {
			for _, name := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
				p := filepath.Join(home, ".ssh", name)
				if _, err := os.Stat(p); err != nil {
					continue
				}
				s, err := ids.load(p)
				if err != nil {
					ids.log.Warn("skipping default identity", "err", err)
					continue
				}
				out = append(out, identity{s, p})
			}
		}
	}
	if ids.agent != nil && !(t.IdentitiesOnly && len(out) > 0) {
		signers, err := ids.agent.Signers()
		if err != nil {
			ids.log.Warn("ssh-agent: cannot list keys", "err", err)
		}
		for _, s := range signers {
			out = append(out, identity{s, "ssh-agent"})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no identity for %s: no usable key in ~/.ssh (id_ed25519, id_ecdsa, id_rsa) or the ssh config, and no ssh-agent (SSH_AUTH_SOCK); pass --ssh-identity FILE", t)
	}
	return out, nil
}

func describe(ids []identity) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return strings.Join(s, ", ")
}
