// Package ssh opens the launcher's SSH connections to remote hosts and runs commands on
// them, with golang.org/x/crypto/ssh and OpenSSH's own files: identities, ~/.ssh/config
// (through kevinburke/ssh_config) and known_hosts.
//
// A [Dialer] is built once per job from [Options] (which the CLI fills from its --ssh-*
// flags) and is safe for concurrent use. [Dialer.DialAll] connects to many hosts in
// parallel, at most Options.MaxInFlight at a time, retrying refused connections with
// backoff. Every [Client] runs a keepalive that notices a dead link within
// KeepaliveInterval+KeepaliveTimeout (7 s by default) and then closes the client, so
// that a [Session.Wait] blocked on a cut host returns an error instead of hanging.
//
// Host keys are always verified. An unknown or changed key fails the dial with an
// [*Error] whose message names the host, the known_hosts file and the fix; with
// Options.AcceptNew an unknown key is appended (hashed) the way OpenSSH's
// StrictHostKeyChecking=accept-new does, and a changed key is still refused.
//
// Remote commands are argument vectors quoted for a POSIX shell, because sshd hands
// the command line to the user's login shell. Environment variables go by the "env"
// channel request, and one that sshd's AcceptEnv refuses fails the start: by default
// nothing goes on the command line, which the remote `ps` shows to every user. Only
// an explicit [EnvInline] puts variables there; secrets belong on stdin in any case.
// [Session.Signal] is passed through but OpenSSH ignores it for root logins; do
// not build process cleanup on it, nor on sshd killing orphans (it does not for commands
// that ignore stdin and stdout).
package ssh
