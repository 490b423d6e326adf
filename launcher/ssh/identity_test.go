package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	xssh "golang.org/x/crypto/ssh"
)

func TestIdentityErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("SSH_AUTH_SOCK", "")
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	blk, err := xssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	enc := filepath.Join(dir, "enc")
	os.WriteFile(enc, pem.EncodeToMemory(blk), 0o600)
	os.WriteFile(filepath.Join(dir, "garbage"), []byte("not a key"), 0o600)

	tests := []struct {
		name, identity, want string
	}{
		{"encrypted", enc, "passphrase-protected: load it into ssh-agent (ssh-add " + enc},
		{"missing", filepath.Join(dir, "nope"), "no such file"},
		{"garbage", filepath.Join(dir, "garbage"), "identity " + filepath.Join(dir, "garbage")},
	}
	for _, tt := range tests {
		if _, err := NewDialer(Options{Identity: tt.identity, ConfigFile: os.DevNull}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.want)
		}
	}
	// "--ssh-identity=~/..." arrives unexpanded
	_, plain, _ := ed25519.GenerateKey(rand.Reader)
	pblk, _ := xssh.MarshalPrivateKey(plain, "")
	os.WriteFile(filepath.Join(dir, "plain"), pem.EncodeToMemory(pblk), 0o600)
	if d, err := NewDialer(Options{Identity: "~/plain", ConfigFile: os.DevNull}); err != nil {
		t.Errorf("~/plain: %v", err)
	} else {
		d.Close()
	}
	// no key anywhere: the dial fails before touching the network, naming the host
	d, err := NewDialer(Options{ConfigFile: os.DevNull, User: "u"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = d.Dial(ctx, "127.0.0.1:1")
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "u@127.0.0.1:1") || !strings.Contains(err.Error(), "--ssh-identity") {
		t.Errorf("err %v, want no-identity error naming u@127.0.0.1:1", err)
	}
}
