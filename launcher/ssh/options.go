package ssh

import (
	"log/slog"
	"time"
)

// Options configures a Dialer. The zero value means OpenSSH's defaults: keys and config
// from ~/.ssh, port 22, strict host key checking. The CLI fills it from its flags.
type Options struct {
	// Identity is a private key file (--ssh-identity). When set it replaces the
	// config's IdentityFile entries and the default ~/.ssh/id_ed25519, id_ecdsa, id_rsa.
	// Keys in ssh-agent (SSH_AUTH_SOCK) are offered in every case.
	Identity string
	// User overrides the config's User (--ssh-user). A "user@" in the host string
	// (e.g. from a hostfile) wins over both.
	User string
	// Port overrides the config's Port (--ssh-port); 0 means the config's, else 22.
	// A ":port" in the host string wins over both.
	Port int
	// ConfigFile is the ssh client config (--ssh-config). Empty means ~/.ssh/config
	// and then /etc/ssh/ssh_config, both optional; a given file is the only one read
	// and must exist, as with ssh -F.
	ConfigFile string
	// KnownHostsFile is the known_hosts file (--ssh-known-hosts). Empty means the
	// config's UserKnownHostsFile, else ~/.ssh/known_hosts, plus the config's
	// GlobalKnownHostsFile or /etc/ssh/ssh_known_hosts (read only).
	KnownHostsFile string
	// AcceptNew appends the key of a host that known_hosts does not list yet
	// (--ssh-accept-new, like StrictHostKeyChecking=accept-new). A changed key is
	// refused regardless.
	AcceptNew bool

	// ConnectTimeout bounds TCP connect plus SSH handshake and authentication of one
	// attempt. Default 15 s.
	ConnectTimeout time.Duration
	// MaxInFlight caps concurrent connection attempts of the Dialer. Default 64.
	MaxInFlight int
	// Retries is how many more attempts a refused or reset connection gets, with
	// backoff 250 ms, 500 ms, 1 s, 2 s, ... Default 4; negative means none.
	Retries int
	// KeepaliveInterval is the time between keepalive requests, KeepaliveTimeout how
	// long one may go unanswered before the client is closed. Defaults 2 s and 5 s.
	KeepaliveInterval, KeepaliveTimeout time.Duration

	// Logger receives retries, accept-new additions and skipped identities. Nil
	// discards them.
	Logger *slog.Logger
}

const (
	defaultConnectTimeout    = 15 * time.Second
	defaultMaxInFlight       = 64
	defaultRetries           = 4
	defaultKeepaliveInterval = 2 * time.Second
	defaultKeepaliveTimeout  = 5 * time.Second
	firstBackoff             = 250 * time.Millisecond
)

func (o Options) withDefaults() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = defaultConnectTimeout
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = defaultMaxInFlight
	}
	if o.Retries == 0 {
		o.Retries = defaultRetries
	} else if o.Retries < 0 {
		o.Retries = 0
	}
	if o.KeepaliveInterval <= 0 {
		o.KeepaliveInterval = defaultKeepaliveInterval
	}
	if o.KeepaliveTimeout <= 0 {
		o.KeepaliveTimeout = defaultKeepaliveTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
