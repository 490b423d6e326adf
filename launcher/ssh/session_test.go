package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	xssh "golang.org/x/crypto/ssh"
)

// envServer is an in-process sshd that refuses every "env" request, as
// Debian's default AcceptEnv refuses most names, and records the command
// lines it is asked to run.
type envServer struct {
	addr string
	mu   sync.Mutex
	cmds []string
	envs []string // names refused
}

func startEnvServer(t *testing.T) *envServer {
	t.Helper()
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := xssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &xssh.ServerConfig{PublicKeyCallback: func(xssh.ConnMetadata, xssh.PublicKey) (*xssh.Permissions, error) { return nil, nil }}
	cfg.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &envServer{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c, cfg)
		}
	}()
	return s
}

func (s *envServer) serve(c net.Conn, cfg *xssh.ServerConfig) {
	defer c.Close()
	_, chans, reqs, err := xssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go xssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(xssh.UnknownChannelType, "no")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for r := range creqs {
				switch r.Type {
				case "env":
					var kv struct{ Name, Value string }
					xssh.Unmarshal(r.Payload, &kv)
					s.mu.Lock()
					s.envs = append(s.envs, kv.Name)
					s.mu.Unlock()
					r.Reply(false, nil)
				case "exec":
					var cmd struct{ Command string }
					xssh.Unmarshal(r.Payload, &cmd)
					s.mu.Lock()
					s.cmds = append(s.cmds, cmd.Command)
					s.mu.Unlock()
					r.Reply(true, nil)
					ch.SendRequest("exit-status", false, xssh.Marshal(struct{ Status uint32 }{0}))
					return
				default:
					r.Reply(false, nil)
				}
			}
		}()
	}
}

// TestRefusedEnvNeverInlined: by default a variable that sshd refuses
// fails Start, naming it, and never reaches the remote command line, where
// `ps` shows it to every user of the host (the default mode used to put it
// there). Only EnvInline puts variables on the command line.
func TestRefusedEnvNeverInlined(t *testing.T) {
	srv := startEnvServer(t)
	dir := t.TempDir()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	blk, _ := xssh.MarshalPrivateKey(priv, "")
	key := filepath.Join(dir, "id")
	os.WriteFile(key, pem.EncodeToMemory(blk), 0o600)
	d, err := NewDialer(Options{Identity: key, User: "u", ConfigFile: os.DevNull, KnownHostsFile: filepath.Join(dir, "kh"), AcceptNew: true, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := d.Dial(ctx, srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	secret := "HCCL_JOB_KEY=00112233"
	_, err = c.Start(ctx, Command{Args: []string{"hcclrun", "agent"}, Env: []string{secret}})
	if err == nil || !strings.Contains(err.Error(), "sshd refused variable HCCL_JOB_KEY") {
		t.Errorf("Start with a refused variable: %v, want it refused by name", err)
	}
	srv.mu.Lock()
	cmds := append([]string(nil), srv.cmds...)
	srv.mu.Unlock()
	for _, cmd := range cmds {
		if strings.Contains(cmd, "00112233") {
			t.Errorf("the variable went on the command line: %q", cmd)
		}
	}

	s, err := c.Start(ctx, Command{Args: []string{"true"}, Env: []string{"A=1"}, EnvMode: EnvInline})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if last := srv.cmds[len(srv.cmds)-1]; last != "env 'A=1' true" || strings.Join(s.Inlined, ",") != "A" {
		t.Errorf("EnvInline ran %q, inlined %v; want %q, [A]", last, s.Inlined, "env 'A=1' true")
	}
}
