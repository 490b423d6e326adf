package runtime

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/netio"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestSocketCongestionKnob: cubic unless HCCL_SOCKET_CONGESTION names
// another (or system, the kernel's default); a name no kernel could have
// is a usage error.
func TestSocketCongestionKnob(t *testing.T) {
	for v, want := range map[string]struct {
		name string
		set  bool
	}{"": {"cubic", false}, "system": {"", true}, "reno": {"reno", true}, " bbr ": {"bbr", true}} {
		k, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_SOCKET_CONGESTION": v}[name] })
		if err != nil || k.SocketCongestion != want.name || k.SocketCongestionSet != want.set {
			t.Errorf("HCCL_SOCKET_CONGESTION=%q: %q set %v, %v; want %q set %v", v, k.SocketCongestion, k.SocketCongestionSet, err, want.name, want.set)
		}
	}
	for _, v := range []string{"Cubic", "cubic;reno", "a_name_far_too_long"} {
		if _, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_SOCKET_CONGESTION": v}[name] }); err == nil {
			t.Errorf("HCCL_SOCKET_CONGESTION=%q accepted", v)
		}
	}
}

// TestCongestionFor: a congestion control the kernel refuses fails Init
// when the user chose it and is passed over when it is the default; one it
// has reaches the data links' sockets.
func TestCongestionFor(t *testing.T) {
	if _, err := congestionFor(tunables{SocketCongestion: "no_such_cc", SocketCongestionSet: true}, discard); err == nil || !strings.Contains(err.Error(), "HCCL_SOCKET_CONGESTION=no_such_cc") {
		t.Errorf("chosen and refused: %v, want an error naming the variable", err)
	}
	if got, err := congestionFor(tunables{SocketCongestion: "no_such_cc"}, discard); got != "" || err != nil {
		t.Errorf("default and refused: %q, %v; want the kernel's, no error", got, err)
	}
	got, err := congestionFor(tunables{SocketCongestion: "reno", SocketCongestionSet: true}, discard)
	if got != "reno" || err != nil {
		t.Fatalf("reno: %q, %v", got, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := &linkManager{dataOpts: netio.SocketOptions{Congestion: got}, log: discard}
	m.tuneData(c, 1)
	if cc, err := netio.Congestion(c); cc != "reno" || err != nil {
		t.Errorf("data link's congestion control %q, %v; want reno", cc, err)
	}
}
