package netio

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
)

const envInNetns = "HCCL_NETIO_TEST_IN_NETNS"

// netnsSetup builds, inside a fresh network namespace, what a test host
// looks like from inside plus container plumbing: eth0 is a veth (as in
// our netns hosts), docker0 and hcbr9 are bridges.
const netnsSetup = `set -e
ip link set lo up
ip link add eth0 type veth peer name vpeer0
ip addr add 10.99.0.1/24 dev eth0
ip link set vpeer0 up
ip link set eth0 up
ip link add docker0 type bridge
ip addr add 172.17.0.1/16 dev docker0
ip link set docker0 up
ip link add hcbr9 type bridge
ip addr add 10.98.0.254/24 dev hcbr9
ip link set hcbr9 up
exec "$0" -test.run='^TestInterfacesInNetns$' -test.v
`

// TestInterfacesInNetns runs the real interface listing and the default
// choice in a private network namespace (unshare --net: it disappears with
// the child process, nothing to clean up).
func TestInterfacesInNetns(t *testing.T) {
	if os.Getenv(envInNetns) == "1" {
		checkNetnsInterfaces(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --net")
	}
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	ctx := testCtx(t, 30*time.Second)
	cmd := exec.CommandContext(ctx, "unshare", "--net", "sh", "-c", netnsSetup, os.Args[0])
	cmd.Env = append(os.Environ(), envInNetns+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestInterfacesInNetns") {
		t.Fatalf("in netns: %v\n%s", err, out)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, "netns:") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

func checkNetnsInterfaces(t *testing.T) {
	ifs, err := Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, ifc := range ifs {
		kinds[ifc.Name] = ifc.Kind
	}
	for name, want := range map[string]string{"lo": "device", "eth0": "veth", "vpeer0": "veth", "docker0": "bridge", "hcbr9": "bridge"} {
		if kinds[name] != want {
			t.Errorf("%s: kind %q, want %q (all: %v)", name, kinds[name], want, kinds)
		}
	}
	for _, tc := range []struct {
		spec   string
		single bool
		want   string
		addr   string
	}{
		{"", false, "eth0", "10.99.0.1"},
		{"", true, "lo", "127.0.0.1"},
		{"hcbr", false, "hcbr9", "10.98.0.254"},
		{"^eth,docker", false, "hcbr9", "10.98.0.254"},
		{"=eth0", false, "eth0", "10.99.0.1"},
	} {
		spec, err := ParseIfSpec(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ChooseInterface(ifs, spec, ChooseOptions{SingleHost: tc.single})
		if err != nil {
			t.Fatalf("spec %q: %v", tc.spec, err)
		}
		if c.Interface.Name != tc.want || c.Addr.String() != tc.addr {
			t.Fatalf("spec %q single %v: chose %s %s (%s), want %s %s", tc.spec, tc.single, c.Interface.Name, c.Addr, c.Reason, tc.want, tc.addr)
		}
		t.Logf("netns: spec %q single=%v -> %s", tc.spec, tc.single, c.Reason)
	}
	// And the chosen address really works: listen on it, dial it.
	key := testKey(t)
	l, err := Listen(net.JoinHostPort("10.99.0.1", "0"), key, wire.Hello{Purpose: wire.PurposeData, Rank: 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, peer, err := Dial(testCtx(t, 5*time.Second), l.Addr().String(), key, wire.Hello{Purpose: wire.PurposeData, Rank: 1})
	if err != nil || peer.Rank != 0 {
		t.Fatalf("dial the chosen address: %v %v", peer, err)
	}
	c.Close()
}
