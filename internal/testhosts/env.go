package testhosts

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// DefaultState is the harness state directory when HCCL_TEST_STATE is not set
// (hosts.sh's HCCL_TH_STATE default).
const DefaultState = "/tmp/hcclrun-testhosts"

// Env describes a running harness. Index i of Hosts and Names is the same host.
type Env struct {
	Hosts      []string // IPv4 addresses, e.g. 10.78.0.1
	Names      []string // h1, h2, ...; also Host aliases in SSHConfig
	User       string   // login user that the harness authorizes (root)
	Key        string   // private key file authorized on every host
	KnownHosts string   // known_hosts with every host's ed25519 key, for port 22 and AltPort
	SSHConfig  string   // OpenSSH client config: Host hI -> HostName, User, IdentityFile, UserKnownHostsFile
	AltPort    int      // second port each sshd listens on, to test "[host]:port" known_hosts entries
	State      string   // harness state directory
	Script     string   // absolute path of hosts.sh
}

// variables hosts.sh env prints; this is the only place the package reads the environment.
var envNames = []string{
	"HCCL_TEST_HOSTS", "HCCL_TEST_HOST_NAMES", "HCCL_TEST_SSH_USER", "HCCL_TEST_SSH_KEY",
	"HCCL_TEST_SSH_KNOWN_HOSTS", "HCCL_TEST_SSH_CONFIG", "HCCL_TEST_SSH_ALT_PORT",
	"HCCL_TEST_STATE", "HCCL_TEST_HOSTS_SCRIPT",
}

// requireHosts reports whether a missing harness is a failure rather than a skip.
func requireHosts() bool { return os.Getenv("HCCL_TEST_REQUIRE_HOSTS") == "1" }

// Lookup describes the harness from the HCCL_TEST_* environment that `hosts.sh env`
// prints or, when HCCL_TEST_HOSTS is not set, from the env file hosts.sh up writes in
// its state directory. The error says what is missing.
func Lookup() (*Env, error) {
	vars := map[string]string{}
	if os.Getenv("HCCL_TEST_HOSTS") != "" {
		for _, k := range envNames {
			vars[k] = os.Getenv(k)
		}
	} else {
		state := os.Getenv("HCCL_TEST_STATE")
		if state == "" {
			state = DefaultState
		}
		b, err := os.ReadFile(state + "/env")
		if err != nil {
			return nil, fmt.Errorf("harness not up: HCCL_TEST_HOSTS is not set and %w", err)
		}
		if vars, err = parseEnvFile(b); err != nil {
			return nil, fmt.Errorf("harness state %s/env: %w", state, err)
		}
	}
	return fromVars(vars)
}

func fromVars(v map[string]string) (*Env, error) {
	e := &Env{
		Hosts:      strings.Fields(v["HCCL_TEST_HOSTS"]),
		Names:      strings.Fields(v["HCCL_TEST_HOST_NAMES"]),
		User:       v["HCCL_TEST_SSH_USER"],
		Key:        v["HCCL_TEST_SSH_KEY"],
		KnownHosts: v["HCCL_TEST_SSH_KNOWN_HOSTS"],
		SSHConfig:  v["HCCL_TEST_SSH_CONFIG"],
		State:      v["HCCL_TEST_STATE"],
		Script:     v["HCCL_TEST_HOSTS_SCRIPT"],
	}
	if len(e.Hosts) == 0 {
		return nil, fmt.Errorf("HCCL_TEST_HOSTS is empty")
	}
	if e.State == "" {
		e.State = DefaultState
	}
	if len(e.Names) == 0 { // an older env without names: hosts.sh numbers them in order
		for i := range e.Hosts {
			e.Names = append(e.Names, "h"+strconv.Itoa(i+1))
		}
	}
	if len(e.Names) != len(e.Hosts) {
		return nil, fmt.Errorf("HCCL_TEST_HOST_NAMES has %d names for %d hosts", len(e.Names), len(e.Hosts))
	}
	for _, k := range []struct{ name, val string }{
		{"HCCL_TEST_SSH_USER", e.User}, {"HCCL_TEST_SSH_KEY", e.Key},
		{"HCCL_TEST_SSH_KNOWN_HOSTS", e.KnownHosts}, {"HCCL_TEST_SSH_CONFIG", e.SSHConfig},
	} {
		if k.val == "" {
			return nil, fmt.Errorf("%s is not set", k.name)
		}
	}
	if p := v["HCCL_TEST_SSH_ALT_PORT"]; p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("HCCL_TEST_SSH_ALT_PORT=%q is not a port", p)
		}
		e.AltPort = n
	}
	return e, nil
}

// parseEnvFile reads the `export NAME=value` / `export NAME="value"` lines that hosts.sh
// writes; anything else is an error, so a corrupted state file is not half-read.
func parseEnvFile(b []byte) (map[string]string, error) {
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rest, ok := strings.CutPrefix(line, "export ")
		name, val, ok2 := strings.Cut(rest, "=")
		if !ok || !ok2 || name == "" || strings.ContainsAny(name, " \t\"'") {
			return nil, fmt.Errorf("line %d: want export NAME=value, got %q", n, line)
		}
		if strings.HasPrefix(val, `"`) {
			if len(val) < 2 || !strings.HasSuffix(val, `"`) || strings.ContainsAny(val[1:len(val)-1], `"\$`+"`") {
				return nil, fmt.Errorf("line %d: bad quoting in %q", n, line)
			}
			val = val[1 : len(val)-1]
		} else if strings.ContainsAny(val, " \t\"'\\$`") {
			return nil, fmt.Errorf("line %d: unquoted value with special characters in %q", n, line)
		}
		vars[name] = val
	}
	return vars, sc.Err()
}
