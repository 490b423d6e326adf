package ssh

// Tests against the real sshd of the simulated hosts of internal/testhosts/hosts.sh. They skip
// (with the command to bring the harness up) unless root and the harness is up.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/testhosts"
	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// harnessOpts uses the harness key, user and known_hosts and no ssh config (/dev/null),
// so nothing of the machine's ~/.ssh leaks into the tests.
func harnessOpts(e *testhosts.Env) Options {
	return Options{Identity: e.Key, User: e.User, KnownHostsFile: e.KnownHosts, ConfigFile: os.DevNull}
}

func newDialer(t *testing.T, o Options) *Dialer {
	t.Helper()
	d, err := NewDialer(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func dial(t *testing.T, ctx context.Context, d *Dialer, host string) *Client {
	t.Helper()
	c, err := d.Dial(ctx, host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// output runs cmd and returns stdout, stderr and the exit status.
func output(t *testing.T, ctx context.Context, c *Client, cmd Command) (string, string, ExitStatus) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	s, err := c.Start(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	s.Stdin.Close()
	st, err := s.Wait()
	if err != nil {
		t.Fatalf("%s: wait: %v", c.Target(), err)
	}
	return out.String(), errb.String(), st
}

func TestRunOnHostsInParallel(t *testing.T) {
	e := testhosts.Require(t, 3)
	ctx := testCtx(t, 30*time.Second)
	d := newDialer(t, harnessOpts(e))
	start := time.Now()
	clients, err := d.DialAll(ctx, e.Hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("DialAll %d hosts: %v", len(e.Hosts), time.Since(start))
	for _, c := range clients {
		defer c.Close()
	}
	tricky := `a b "c" 'd' $HOME \`
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			s, err := c.Start(ctx, Command{
				Args: []string{"sh", "-c", `hostname; printf '%s|' "$1" "$HCCL_T" "$OTHER_T" >&2; read line; echo "in:$line"; exit 7`, "x", tricky},
				Env:  []string{"HCCL_T=accepted value", "OTHER_T=not 'accepted'"},
				// sshd's AcceptEnv covers HCCL_* only: OTHER_T goes on the
				// command line, as asked
				EnvMode: EnvInline,
			})
			if err != nil {
				t.Error(err)
				return
			}
			if fmt.Sprint(s.Inlined) != "[HCCL_T OTHER_T]" {
				t.Errorf("%s: inlined %v, want [HCCL_T OTHER_T]", c.Target(), s.Inlined)
			}
			io.WriteString(s.Stdin, "hello\n")
			s.Stdin.Close()
			var stderr []byte
			done := make(chan struct{})
			go func() { stderr, _ = io.ReadAll(s.Stderr); close(done) }()
			var lines []string
			sc := bufio.NewScanner(s.Stdout)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			<-done
			st, err := s.Wait()
			if err != nil {
				t.Error(err)
				return
			}
			want := []string{e.Names[i], "in:hello"}
			if fmt.Sprint(lines) != fmt.Sprint(want) {
				t.Errorf("%s: stdout %q, want %q", c.Target(), lines, want)
			}
			if w := tricky + "|accepted value|not 'accepted'|"; string(stderr) != w {
				t.Errorf("%s: stderr %q, want %q", c.Target(), stderr, w)
			}
			if st.Code != 7 || st.Signal != "" || st.Success() {
				t.Errorf("%s: status %+v, want exit 7", c.Target(), st)
			}
		})
	}
	wg.Wait()
}

func TestEnvModes(t *testing.T) {
	e := testhosts.Require(t, 1)
	ctx := testCtx(t, 20*time.Second)
	c := dial(t, ctx, newDialer(t, harnessOpts(e)), e.Hosts[0])
	cmd := Command{Args: []string{"sh", "-c", `echo "$HCCL_A,$NOPE_B"`}, Env: []string{"HCCL_A=1 2", "NOPE_B=$x"}}
	tests := []struct {
		mode    EnvMode
		inlined string
		wantErr string
	}{
		{EnvInline, "[HCCL_A NOPE_B]", ""},
		{EnvRequest, "", "sshd refused variable NOPE_B"},
	}
	for _, tt := range tests {
		cmd.EnvMode = tt.mode
		var out bytes.Buffer
		cmd.Stdout = &out
		s, err := c.Start(ctx, cmd)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("mode %d: err %v, want %q", tt.mode, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Wait(); err != nil {
			t.Fatal(err)
		}
		if out.String() != "1 2,$x\n" || fmt.Sprint(s.Inlined) != tt.inlined {
			t.Errorf("mode %d: out %q inlined %v, want %q %s", tt.mode, out.String(), s.Inlined, "1 2,$x\n", tt.inlined)
		}
	}
}

func TestSignalDeath(t *testing.T) {
	e := testhosts.Require(t, 1)
	ctx := testCtx(t, 20*time.Second)
	d := newDialer(t, harnessOpts(e))
	start := time.Now()
	c := dial(t, ctx, d, e.Hosts[0])
	t.Logf("Dial (TCP, handshake, auth): %v", time.Since(start))
	_, _, st := output(t, ctx, c, Command{Args: []string{"sh", "-c", "kill -TERM $$"}})
	if st.Signal != "TERM" || st.Code != 143 {
		t.Fatalf("status %+v, want killed by TERM (143)", st)
	}
}

func TestSSHConfigAlias(t *testing.T) {
	e := testhosts.Require(t, 2)
	ctx := testCtx(t, 20*time.Second)
	// everything (HostName, User, IdentityFile, UserKnownHostsFile) from the harness's config
	d := newDialer(t, Options{ConfigFile: e.SSHConfig})
	c := dial(t, ctx, d, e.Names[1])
	if got := c.Target().String(); got != fmt.Sprintf("root@%s:22 (%s)", e.Names[1], e.Hosts[1]) {
		t.Errorf("target %s", got)
	}
	if out, _, _ := output(t, ctx, c, Command{Args: []string{"hostname"}}); out != e.Names[1]+"\n" {
		t.Errorf("hostname %q", out)
	}
}

// TestDefaultIdentity: with no options at all, the key comes from ~/.ssh/id_ed25519
// and the host key from ~/.ssh/known_hosts.
func TestDefaultIdentity(t *testing.T) {
	e := testhosts.Require(t, 1)
	ctx := testCtx(t, 20*time.Second)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", "")
	copyFile(t, e.Key, filepath.Join(home, ".ssh", "id_ed25519"))
	copyFile(t, e.KnownHosts, filepath.Join(home, ".ssh", "known_hosts"))
	c := dial(t, ctx, newDialer(t, Options{User: e.User}), e.Hosts[0])
	if _, _, st := output(t, ctx, c, Command{Args: []string{"true"}}); !st.Success() {
		t.Fatal(st)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(to), 0o700)
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// hostPub reads a host's public key of the given type from the harness state.
func hostPub(t *testing.T, e *testhosts.Env, i int, typ string) xssh.PublicKey {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.State, e.Names[i], "ssh_host_"+typ+"_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	k, _, _, _, err := xssh.ParseAuthorizedKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func randomPub(t *testing.T) xssh.PublicKey {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := xssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writeKnownHosts(t *testing.T, lines ...string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestHostKeys(t *testing.T) {
	e := testhosts.Require(t, 1)
	ip, port2 := e.Hosts[0], e.AltPort
	ed, ec := hostPub(t, e, 0, "ed25519"), hostPub(t, e, 0, "ecdsa")
	line := func(addr string, k xssh.PublicKey) string { return knownhosts.Line([]string{addr}, k) }
	hashed := func(addr string, k xssh.PublicKey) string {
		return knownhosts.HashHostname(knownhosts.Normalize(addr)) + " " + strings.TrimSpace(string(xssh.MarshalAuthorizedKey(k)))
	}
	tests := []struct {
		name   string
		known  []string
		port   int
		kind   error    // nil: connects
		inMsg  []string // substrings of the error
		optsFn func(*Options)
	}{
		{name: "harness file", known: nil},
		{name: "hashed entry", known: []string{hashed(ip+":22", ed)}},
		// the server prefers ed25519; the client must ask for ecdsa to match this file
		{name: "only ecdsa known", known: []string{line(ip+":22", ec)}},
		{name: "alt port, [host]:port entry", known: []string{line(ip+":"+strconv.Itoa(port2), ed)}, port: port2},
		{name: "empty file", known: []string{}, kind: ErrHostKeyUnknown,
			inMsg: []string{"root@" + ip + ":22", "known_hosts", "ssh-keyscan -H " + ip + " >> ", "--ssh-accept-new", xssh.FingerprintSHA256(ed)}},
		{name: "alt port not known by port-22 entry", known: []string{line(ip+":22", ed)}, port: port2, kind: ErrHostKeyUnknown,
			inMsg: []string{"ssh-keyscan -H -p " + strconv.Itoa(port2) + " " + ip, "[" + ip + "]:" + strconv.Itoa(port2)}},
		{name: "changed key", known: []string{line(ip+":22", randomPub(t))}, kind: ErrHostKeyChanged,
			inMsg: []string{"root@" + ip + ":22", "known_hosts", ":1 holds ssh-ed25519", "ssh-keygen -R " + ip}},
		{name: "changed key, hashed, accept-new", known: []string{hashed(ip+":22", randomPub(t))}, kind: ErrHostKeyChanged,
			optsFn: func(o *Options) { o.AcceptNew = true }, inMsg: []string{"known_hosts", "does not replace changed keys"}},
		{name: "revoked", known: []string{"@revoked * " + strings.TrimSpace(string(xssh.MarshalAuthorizedKey(ed))), line(ip+":22", ed)}, kind: ErrHostKeyChanged,
			inMsg: []string{"@revoked"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t, 20*time.Second)
			o := harnessOpts(e)
			if tt.known != nil {
				o.KnownHostsFile = writeKnownHosts(t, tt.known...)
			}
			o.Port = tt.port
			if tt.optsFn != nil {
				tt.optsFn(&o)
			}
			var before []byte
			if tt.known != nil {
				before, _ = os.ReadFile(o.KnownHostsFile)
			}
			c, err := newDialer(t, o).Dial(ctx, ip)
			if tt.kind == nil {
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("connected, want a host key error")
			}
			if !errors.Is(err, tt.kind) {
				t.Fatalf("err %v, want kind %v", err, tt.kind)
			}
			for _, s := range tt.inMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if tt.known != nil {
				if after, _ := os.ReadFile(o.KnownHostsFile); !bytes.Equal(before, after) {
					t.Errorf("known_hosts changed after a refused key:\n%s", after)
				}
			}
			t.Logf("%v", err)
		})
	}
}

func TestAcceptNew(t *testing.T) {
	e := testhosts.Require(t, 3)
	ctx := testCtx(t, 30*time.Second)
	kh := filepath.Join(t.TempDir(), "sub", "known_hosts") // does not exist yet
	o := harnessOpts(e)
	o.KnownHostsFile, o.AcceptNew = kh, true
	d := newDialer(t, o)
	// the same host twice at once must give one line, not two
	hosts := append(append([]string{}, e.Hosts...), e.Hosts[0])
	clients, err := d.DialAll(ctx, hosts)
	for _, c := range clients {
		if c != nil {
			c.Close()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(kh)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != len(e.Hosts) {
		t.Fatalf("known_hosts has %d lines, want %d:\n%s", len(lines), len(e.Hosts), b)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "|1|") {
			t.Errorf("line not hashed: %q", l)
		}
	}
	// now known: a strict dialer connects with the recorded keys
	o.AcceptNew = false
	for _, h := range e.Hosts {
		dial(t, ctx, newDialer(t, o), h).Close()
	}
	// a key that differs from the recorded one is refused even with accept-new
	os.WriteFile(kh, []byte(knownhosts.Line([]string{e.Hosts[1]}, randomPub(t))+"\n"), 0o600)
	o.AcceptNew = true
	if _, err := newDialer(t, o).Dial(ctx, e.Hosts[1]); !errors.Is(err, ErrHostKeyChanged) {
		t.Fatalf("err %v, want host key changed", err)
	}
}

func writeKey(t *testing.T) string {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := xssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "id_other")
	if err := os.WriteFile(f, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRefused(t *testing.T) {
	e := testhosts.Require(t, 1)
	ip := e.Hosts[0]
	otherKey := writeKey(t)
	prefix := strings.Join(strings.Split(ip, ".")[:3], ".")
	tests := []struct {
		name  string
		host  string
		opts  func(*Options)
		kind  error
		inMsg []string
	}{
		{"wrong user", ip, func(o *Options) { o.User = "daemon" }, ErrAuth,
			[]string{"daemon@" + ip + ":22", "refused user \"daemon\"", e.Key, "authorized_keys"}},
		{"unknown user", "nosuchuser@" + ip, nil, ErrAuth, []string{"nosuchuser@" + ip + ":22"}},
		{"wrong key", ip, func(o *Options) { o.Identity = otherKey }, ErrAuth,
			[]string{"root@" + ip + ":22", otherKey, "ssh-ed25519 SHA256:"}},
		{"connection refused", ip + ":1", func(o *Options) { o.Retries = 2 }, ErrUnreachable,
			[]string{"root@" + ip + ":1", "connection refused", "after 3 attempts"}},
		{"no such host", prefix + ".199", func(o *Options) { o.ConnectTimeout = 2 * time.Second }, ErrUnreachable,
			[]string{"root@" + prefix + ".199:22"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t, 20*time.Second)
			o := harnessOpts(e)
			if tt.opts != nil {
				tt.opts(&o)
			}
			c, err := newDialer(t, o).Dial(ctx, tt.host)
			if err == nil {
				c.Close()
				t.Fatal("connected")
			}
			if !errors.Is(err, tt.kind) {
				t.Fatalf("err %v, want kind %v", err, tt.kind)
			}
			for _, s := range tt.inMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			t.Logf("%v", err)
		})
	}
}

// TestKeepaliveNoticesCut: a command waits on a host whose link is then cut; Wait must
// return a connection-lost error within 10 s instead of hanging.
func TestKeepaliveNoticesCut(t *testing.T) {
	e := testhosts.Require(t, 2)
	for _, silent := range []bool{false, true} {
		t.Run(fmt.Sprintf("silent=%v", silent), func(t *testing.T) {
			ctx := testCtx(t, 40*time.Second)
			d := newDialer(t, harnessOpts(e))
			c := dial(t, ctx, d, e.Hosts[1])
			s, err := c.Start(ctx, Command{Args: []string{"sh", "-c", "echo $$; exec sleep 60"}})
			if err != nil {
				t.Fatal(err)
			}
			pid, err := bufio.NewReader(s.Stdout).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { _, err := s.Wait(); waited <- err }()
			e.Cut(t, e.Names[1], silent)
			cut := time.Now()
			select {
			case err = <-waited:
			case <-time.After(15 * time.Second):
				t.Fatal("Wait still blocked 15 s after the cut")
			}
			took := time.Since(cut)
			t.Logf("noticed after %v: %v", took, err)
			if !errors.Is(err, ErrConnLost) || !strings.Contains(err.Error(), "keepalive") {
				t.Errorf("err %v, want connection lost by keepalive", err)
			}
			if took > 10*time.Second {
				t.Errorf("took %v, want < 10 s", took)
			}
			select {
			case <-c.Done():
			default:
				t.Error("client not done after keepalive failure")
			}
			// the sleep survives on the host (sshd does not kill it): clean up
			e.Heal(t, e.Names[1])
			c2 := dial(t, ctx, d, e.Hosts[1])
			output(t, ctx, c2, Command{Args: []string{"kill", strings.TrimSpace(pid)}})
		})
	}
}

func TestConcurrentSessions(t *testing.T) {
	e := testhosts.Require(t, 1)
	ctx := testCtx(t, 30*time.Second)
	c := dial(t, ctx, newDialer(t, harnessOpts(e)), e.Hosts[0])
	const n = 20
	outs := make([]string, n)
	errs := make([]error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var out bytes.Buffer
			s, err := c.Start(ctx, Command{Args: []string{"sh", "-c", "sleep 1; echo " + strconv.Itoa(i)}, Stdout: &out, Stderr: io.Discard})
			if err != nil {
				errs[i] = err
				return
			}
			st, err := s.Wait()
			if err == nil && !st.Success() {
				err = errors.New(st.String())
			}
			outs[i], errs[i] = out.String(), err
		})
	}
	wg.Wait()
	took := time.Since(start)
	for i := range n {
		if errs[i] != nil || outs[i] != strconv.Itoa(i)+"\n" {
			t.Errorf("session %d: %q %v", i, outs[i], errs[i])
		}
	}
	t.Logf("%d concurrent sessions of 1 s each on one connection: %v", n, took)
	if took > 8*time.Second {
		t.Errorf("took %v: sessions did not run concurrently", took)
	}
}

// TestManyDials: more connections than MaxInFlight, several per host at once, as a
// large job's fan-out does; all must get through sshd's MaxStartups.
func TestManyDials(t *testing.T) {
	e := testhosts.Require(t, 3)
	ctx := testCtx(t, 60*time.Second)
	o := harnessOpts(e)
	o.MaxInFlight = 8
	var hosts []string
	for range 10 {
		hosts = append(hosts, e.Hosts...)
	}
	start := time.Now()
	clients, err := newDialer(t, o).DialAll(ctx, hosts)
	took := time.Since(start)
	for _, c := range clients {
		if c != nil {
			c.Close()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d dials, %d in flight: %v", len(hosts), o.MaxInFlight, took)
}

// TestAgent: with no key file anywhere, the key held by a real OpenSSH ssh-agent
// (started here, stopped by PID) is used.
func TestAgent(t *testing.T) {
	e := testhosts.Require(t, 1)
	agentBin, err := exec.LookPath("ssh-agent")
	if err != nil {
		t.Skip("ssh-agent not installed (openssh-client)")
	}
	ctx := testCtx(t, 20*time.Second)
	home := t.TempDir()
	sock := filepath.Join(home, "agent.sock")
	agentCmd := exec.CommandContext(ctx, agentBin, "-D", "-a", sock)
	if err := agentCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agentCmd.Process.Kill(); agentCmd.Wait() })
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ssh-agent socket did not appear")
		}
	}
	add := exec.CommandContext(ctx, "ssh-add", e.Key)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v: %s", err, out)
	}
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", sock)
	o := harnessOpts(e)
	o.Identity = ""
	c := dial(t, ctx, newDialer(t, o), e.Hosts[0])
	if _, _, st := output(t, ctx, c, Command{Args: []string{"true"}}); !st.Success() {
		t.Fatal(st)
	}
}
