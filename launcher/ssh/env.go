package ssh

import (
	"os"
	"os/user"
)

// The process environment this package reads, all in one place.

// agentSocket is the ssh-agent socket, "" when no agent is set up.
func agentSocket() string { return os.Getenv("SSH_AUTH_SOCK") }

// homeDir is where ~/.ssh lives.
func homeDir() (string, error) { return os.UserHomeDir() }

// localUser is the login name used when neither the host, the options nor the ssh config
// names one (OpenSSH uses the local user too).
func localUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "root"
}
