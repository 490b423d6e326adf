package ssh

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	sshconfig "github.com/kevinburke/ssh_config"
)

// Target is one host resolved through the host string, the Options and the ssh config.
type Target struct {
	Alias    string // the host as named by the caller, without user@ and :port
	HostName string // the address dialled: the config's HostName, else Alias
	Port     int
	User     string
	// HostKeyName is the name looked up in known_hosts: the config's HostKeyAlias,
	// else HostName, as OpenSSH does.
	HostKeyName string
	// IdentityFiles are the config's IdentityFile entries, expanded; they are used
	// when Options.Identity is empty.
	IdentityFiles []string
	// IdentitiesOnly is the config's IdentitiesOnly: offer the identity files only,
	// not every key of the ssh-agent (each refused key counts against the server's
	// MaxAuthTries, 6 by default).
	IdentitiesOnly bool
	// KnownHosts are the known_hosts files to check, the first is the one AcceptNew
	// appends to; the rest are read only.
	KnownHosts []string
}

// Addr is the TCP address dialled.
func (t Target) Addr() string { return net.JoinHostPort(t.HostName, strconv.Itoa(t.Port)) }

// hostKeyAddr is the address known_hosts is checked against ("[name]:port" unless 22).
func (t Target) hostKeyAddr() string {
	return net.JoinHostPort(t.HostKeyName, strconv.Itoa(t.Port))
}

// String is "user@host:port", with the address in parentheses when the config mapped
// an alias to another HostName; every error names a host this way.
func (t Target) String() string {
	s := t.User + "@" + net.JoinHostPort(t.Alias, strconv.Itoa(t.Port))
	if t.HostName != t.Alias {
		s += " (" + t.HostName + ")"
	}
	return s
}

// splitHost parses "[user@]host[:port]" and "[user@][v6addr]:port"; a bare IPv6
// address (two or more colons, no brackets) has no port.
func splitHost(s string) (user, host string, port int, err error) {
	if i := strings.LastIndex(s, "@"); i >= 0 {
		user, s = s[:i], s[i+1:]
		if user == "" {
			return "", "", 0, fmt.Errorf("empty user in %q", s)
		}
	}
	host = s
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
				return "", "", 0, fmt.Errorf("bad host %q: %w", s, err)
			}
			host = s[1 : len(s)-1] // "[v6addr]" without a port
		} else {
			n, err := strconv.Atoi(p)
			if err != nil || n <= 0 || n > 65535 {
				return "", "", 0, fmt.Errorf("bad port in host %q", s)
			}
			host, port = h, n
		}
	}
	if host == "" {
		return "", "", 0, fmt.Errorf("empty host name")
	}
	return user, host, port, nil
}

// sshConfig is the parsed client configuration: one file (ssh -F) or the user's then
// the system's, first value wins.
type sshConfig struct {
	files []*sshconfig.Config
	names []string
}

func loadSSHConfig(file string) (*sshConfig, error) {
	c := &sshConfig{}
	paths := []string{file}
	must := true
	if file == "" {
		must = false
		paths = []string{"/etc/ssh/ssh_config"}
		if home, err := homeDir(); err == nil {
			paths = []string{filepath.Join(home, ".ssh", "config"), "/etc/ssh/ssh_config"}
		}
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			if !must && os.IsNotExist(err) {
				continue
			}
			return nil, fmt.Errorf("ssh config: %w", err)
		}
		cfg, err := sshconfig.Decode(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("ssh config %s: %w", p, err)
		}
		c.files = append(c.files, cfg)
		c.names = append(c.names, p)
	}
	return c, nil
}

func (c *sshConfig) get(alias, key string) (string, error) {
	for i, f := range c.files {
		v, err := f.Get(alias, key)
		if err != nil {
			return "", fmt.Errorf("ssh config %s: host %s: %s: %w", c.names[i], alias, key, err)
		}
		if v != "" {
			return v, nil
		}
	}
	return "", nil
}

func (c *sshConfig) getAll(alias, key string) ([]string, error) {
	var all []string
	for i, f := range c.files {
		v, err := f.GetAll(alias, key)
		if err != nil {
			return nil, fmt.Errorf("ssh config %s: host %s: %s: %w", c.names[i], alias, key, err)
		}
		all = append(all, v...)
	}
	return all, nil
}

// resolve applies, per field, the precedence host string > Options > ssh config >
// default.
func (c *sshConfig) resolve(host string, o Options) (Target, error) {
	u, alias, port, err := splitHost(host)
	if err != nil {
		return Target{}, err
	}
	t := Target{Alias: alias, User: u, Port: port}
	get := func(key string) string {
		if err != nil {
			return ""
		}
		var v string
		v, err = c.get(alias, key)
		return v
	}
	if t.User == "" {
		t.User = o.User
	}
	if t.User == "" {
		t.User = get("User")
	}
	if t.User == "" {
		t.User = localUser()
	}
	if t.Port == 0 {
		t.Port = o.Port
	}
	if t.Port == 0 {
		if p := get("Port"); p != "" {
			n, perr := strconv.Atoi(p)
			if perr != nil || n <= 0 || n > 65535 {
				return Target{}, fmt.Errorf("ssh config: host %s: bad Port %q", alias, p)
			}
			t.Port = n
		}
	}
	if t.Port == 0 {
		t.Port = 22
	}
	t.HostName = alias
	if h := get("HostName"); h != "" {
		t.HostName = strings.ReplaceAll(h, "%h", alias)
	}
	t.HostKeyName = t.HostName
	if a := get("HostKeyAlias"); a != "" {
		t.HostKeyName = a
	}
	ids, gerr := c.getAll(alias, "IdentityFile")
	if gerr != nil {
		return Target{}, gerr
	}
	for _, id := range ids {
		t.IdentityFiles = append(t.IdentityFiles, expandPath(id, t))
	}
	t.IdentitiesOnly = strings.EqualFold(get("IdentitiesOnly"), "yes")
	user := get("UserKnownHostsFile")
	global := get("GlobalKnownHostsFile")
	if err != nil {
		return Target{}, err
	}
	if o.KnownHostsFile != "" {
		t.KnownHosts = []string{o.KnownHostsFile}
	} else {
		for _, f := range strings.Fields(user) {
			t.KnownHosts = append(t.KnownHosts, expandPath(f, t))
		}
		if len(t.KnownHosts) == 0 {
			home, herr := homeDir()
			if herr != nil {
				return Target{}, fmt.Errorf("known_hosts: no home directory: %w", herr)
			}
			t.KnownHosts = []string{filepath.Join(home, ".ssh", "known_hosts")}
		}
		if global == "" {
			global = "/etc/ssh/ssh_known_hosts"
		}
		for _, f := range strings.Fields(global) {
			t.KnownHosts = append(t.KnownHosts, expandPath(f, t))
		}
	}
	return t, nil
}

// expandPath does what OpenSSH does to IdentityFile and known_hosts paths: ~ and the
// tokens %d (home), %u (local user), %r (remote user), %h (host name), %p (port), %%.
func expandPath(p string, t Target) string {
	p = expandTilde(p)
	home, _ := homeDir()
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+1 == len(p) {
			b.WriteByte(p[i])
			continue
		}
		i++
		switch p[i] {
		case 'd':
			b.WriteString(home)
		case 'u':
			b.WriteString(localUser())
		case 'r':
			b.WriteString(t.User)
		case 'h':
			b.WriteString(t.HostName)
		case 'p':
			b.WriteString(strconv.Itoa(t.Port))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(p[i])
		}
	}
	return b.String()
}

// expandTilde replaces a leading "~/" by the home directory.
func expandTilde(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := homeDir(); err == nil {
			return home + p[1:]
		}
	}
	return p
}
