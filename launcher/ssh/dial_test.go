package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	xssh "golang.org/x/crypto/ssh"
)

// TestDialCapAndHandshakeTimeout dials a loopback listener that accepts and then says
// nothing (a hung sshd): at most MaxInFlight connections may be open at once, and each
// attempt must give up after ConnectTimeout with a clear error.
func TestDialCapAndHandshakeTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// accept times; the server holds each connection until the client gives up
	var mu sync.Mutex
	var accepted []time.Time
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted = append(accepted, time.Now())
			mu.Unlock()
			go func() {
				buf := make([]byte, 1<<16)
				for {
					if _, err := c.Read(buf); err != nil {
						break
					}
				}
				c.Close()
			}()
		}
	}()

	dir := t.TempDir()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	blk, _ := xssh.MarshalPrivateKey(priv, "")
	key := filepath.Join(dir, "id")
	os.WriteFile(key, pem.EncodeToMemory(blk), 0o600)
	d, err := NewDialer(Options{Identity: key, User: "u", ConfigFile: os.DevNull, KnownHostsFile: filepath.Join(dir, "kh"),
		MaxInFlight: 2, ConnectTimeout: 300 * time.Millisecond, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	hosts := make([]string, 5)
	for i := range hosts {
		hosts[i] = ln.Addr().String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	clients, err := d.DialAll(ctx, hosts)
	took := time.Since(start)
	for _, c := range clients {
		if c != nil {
			t.Fatal("connected to a server that never spoke")
		}
	}
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "no ssh handshake within 300ms") || !strings.Contains(err.Error(), "u@"+ln.Addr().String()) {
		t.Fatalf("err %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// the first round is MaxInFlight connections at once; the third waits until one of
	// them times out (a server-side count of open connections would lag the closes)
	early := 0
	for _, at := range accepted {
		if at.Sub(start) < 200*time.Millisecond {
			early++
		}
	}
	if early != 2 || len(accepted) != len(hosts) {
		t.Errorf("%d connections in the first 200 ms, %d in all; want MaxInFlight = 2 and %d", early, len(accepted), len(hosts))
	}
	// 5 attempts, 2 at a time, 300 ms each: three rounds
	if took < 800*time.Millisecond || took > 5*time.Second {
		t.Errorf("took %v, want about 900 ms", took)
	}
}
