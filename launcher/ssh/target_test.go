package ssh

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSplitHost(t *testing.T) {
	tests := []struct {
		in         string
		user, host string
		port       int
		wantErr    string
	}{
		{in: "h1", host: "h1"},
		{in: "bob@h1", user: "bob", host: "h1"},
		{in: "h1:2222", host: "h1", port: 2222},
		{in: "bob@10.0.0.1:22", user: "bob", host: "10.0.0.1", port: 22},
		{in: "fe80::1", host: "fe80::1"},
		{in: "[fe80::1]:2200", host: "fe80::1", port: 2200},
		{in: "[fe80::1]", host: "fe80::1"},
		{in: "a@b@h", user: "a@b", host: "h"},
		{in: "@h", wantErr: "empty user"},
		{in: "", wantErr: "empty host"},
		{in: "h:0", wantErr: "bad port"},
		{in: "h:x", wantErr: "bad port"},
		{in: "h:70000", wantErr: "bad port"},
		{in: "[::1", wantErr: "bad host"},
		{in: "[]", wantErr: "empty host"}, // found by FuzzSplitHost
		{in: "[]:22", wantErr: "empty host"},
	}
	for _, tt := range tests {
		u, h, p, err := splitHost(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("splitHost(%q) err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || u != tt.user || h != tt.host || p != tt.port {
			t.Errorf("splitHost(%q) = %q %q %d %v, want %q %q %d", tt.in, u, h, p, err, tt.user, tt.host, tt.port)
		}
	}
}

func FuzzSplitHost(f *testing.F) {
	for _, s := range []string{"h1", "bob@h1:2222", "[fe80::1]:22", "fe80::1", "@", ":", "[]:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, h, p, err := splitHost(s)
		if err != nil {
			return
		}
		if h == "" || p < 0 || p > 65535 || strings.Contains(h, "@") && u == "" {
			t.Fatalf("splitHost(%q) = %q %q %d", s, u, h, p)
		}
	})
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	cfg := filepath.Join(dir, "config")
	os.WriteFile(cfg, []byte(`
Host alias
  HostName 10.1.2.3
  User carol
  Port 2200
  IdentityFile ~/.ssh/alias_key
  IdentityFile %d/k-%r-%h-%p
  UserKnownHostsFile ~/kh1 ~/kh2
  GlobalKnownHostsFile /dev/null
Host pat*
  HostName %h.example.org
  IdentitiesOnly yes
  HostKeyAlias shared
Host *
  User dave
`), 0o600)
	c, err := loadSSHConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		opts Options
		want Target
	}{
		{"alias", Options{}, Target{Alias: "alias", HostName: "10.1.2.3", Port: 2200, User: "carol", HostKeyName: "10.1.2.3",
			IdentityFiles: []string{dir + "/.ssh/alias_key", dir + "/k-carol-10.1.2.3-2200"},
			KnownHosts:    []string{dir + "/kh1", dir + "/kh2", "/dev/null"}}},
		// flags win over the config, the host string over flags
		{"alias", Options{User: "eve", Port: 22, KnownHostsFile: "/x/kh"}, Target{Alias: "alias", HostName: "10.1.2.3", Port: 22, User: "eve", HostKeyName: "10.1.2.3",
			IdentityFiles: []string{dir + "/.ssh/alias_key", dir + "/k-eve-10.1.2.3-22"}, KnownHosts: []string{"/x/kh"}}},
		{"frank@alias:23", Options{User: "eve", Port: 22}, Target{Alias: "alias", HostName: "10.1.2.3", Port: 23, User: "frank", HostKeyName: "10.1.2.3",
			IdentityFiles: []string{dir + "/.ssh/alias_key", dir + "/k-frank-10.1.2.3-23"}, KnownHosts: []string{dir + "/kh1", dir + "/kh2", "/dev/null"}}},
		{"pat1", Options{}, Target{Alias: "pat1", HostName: "pat1.example.org", Port: 22, User: "dave", HostKeyName: "shared", IdentitiesOnly: true,
			KnownHosts: []string{dir + "/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts"}}},
	}
	for _, tt := range tests {
		got, err := c.resolve(tt.host, tt.opts)
		if err != nil {
			t.Fatalf("resolve(%q): %v", tt.host, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("resolve(%q, %+v)\n got %+v\nwant %+v", tt.host, tt.opts, got, tt.want)
		}
	}
	if got := (Target{Alias: "alias", HostName: "10.1.2.3", Port: 2200, User: "carol"}).String(); got != "carol@alias:2200 (10.1.2.3)" {
		t.Errorf("String() = %q", got)
	}
	if _, err := loadSSHConfig(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("a missing --ssh-config file must be an error")
	}
}
