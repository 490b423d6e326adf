package testhosts

import (
	"strings"
	"testing"
)

func TestParseEnvFile(t *testing.T) {
	good := `export HCCL_TEST_HOSTS="10.78.0.1 10.78.0.2"
export HCCL_TEST_HOST_NAMES="h1 h2"
export HCCL_TEST_SSH_USER=root
export HCCL_TEST_SSH_KEY=/tmp/s/id_ed25519
export HCCL_TEST_SSH_KNOWN_HOSTS=/tmp/s/known_hosts
export HCCL_TEST_SSH_CONFIG=/tmp/s/ssh_config
export HCCL_TEST_SSH_ALT_PORT=2222
`
	tests := []struct {
		name, in, wantErr string
	}{
		{"good", good, ""},
		{"comment and blank", "# x\n\n" + good, ""},
		{"no export", "HCCL_TEST_HOSTS=1\n", "want export NAME=value"},
		{"unterminated quote", "export A=\"x\n", "bad quoting"},
		{"dollar in quotes", "export A=\"$(rm)\"\n", "bad quoting"},
		{"space unquoted", "export A=x y\n", "unquoted value"},
		{"no hosts", "export HCCL_TEST_SSH_USER=root\n", "HCCL_TEST_HOSTS is empty"},
		{"name count", strings.Replace(good, `"h1 h2"`, `"h1"`, 1), "1 names for 2 hosts"},
		{"missing key", strings.Replace(good, "export HCCL_TEST_SSH_KEY=/tmp/s/id_ed25519\n", "", 1), "HCCL_TEST_SSH_KEY is not set"},
		{"bad port", strings.Replace(good, "=2222", "=x", 1), "not a port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := parseEnvFile([]byte(tt.in))
			var e *Env
			if err == nil {
				e, err = fromVars(v)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(e.Hosts) != 2 || e.Hosts[1] != "10.78.0.2" || e.Names[1] != "h2" || e.AltPort != 2222 || e.User != "root" {
					t.Fatalf("got %+v", e)
				}
				if e.Name("10.78.0.2") != "h2" || e.Name("1.2.3.4") != "1.2.3.4" {
					t.Fatalf("Name mapping wrong")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
			}
		})
	}
}

func FuzzParseEnvFile(f *testing.F) {
	f.Add("export HCCL_TEST_HOSTS=\"10.78.0.1 10.78.0.2\"\nexport HCCL_TEST_SSH_USER=root\n")
	f.Add("# c\n\nexport A=b\n")
	f.Add("export A=\"x\nexport =\n")
	f.Fuzz(func(t *testing.T, in string) {
		vars, err := parseEnvFile([]byte(in))
		if err != nil {
			return
		}
		// whatever is accepted must be plain: no shell metacharacters survive
		for k, v := range vars {
			if k == "" || strings.ContainsAny(k, " \t\"'") || strings.ContainsAny(v, "\"$`") {
				t.Fatalf("accepted %q=%q from %q", k, v, in)
			}
		}
		fromVars(vars) // must not panic
	})
}
