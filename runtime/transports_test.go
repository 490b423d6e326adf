package runtime

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/runtime/topo"
	"github.com/hcclrun/hcclrun/runtime/transport/shmlink"
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
// when the user chose it, naming the variable, and is passed over when it
// is the default; one it has is kept (tcplink's tests show it reaching the
// sockets).
func TestCongestionFor(t *testing.T) {
	if _, err := congestionFor(tunables{SocketCongestion: "no_such_cc", SocketCongestionSet: true}, discard); err == nil || !strings.Contains(err.Error(), "HCCL_SOCKET_CONGESTION=no_such_cc: the kernel refuses it") {
		t.Errorf("chosen and refused: %v, want an error naming the variable", err)
	}
	if got, err := congestionFor(tunables{SocketCongestion: "no_such_cc"}, discard); got != "" || err != nil {
		t.Errorf("default and refused: %q, %v; want the kernel's, no error", got, err)
	}
	if got, err := congestionFor(tunables{SocketCongestion: "reno", SocketCongestionSet: true}, discard); got != "reno" || err != nil {
		t.Fatalf("reno: %q, %v", got, err)
	}
}

// TestTransportsFor: the table is {shm, tcp}, or {tcp} alone where shared
// memory is off or the rank is alone; the executor polls as the shm
// waits, and not at all without shared memory; a ring HCCL_BUFFSIZE makes
// impossible fails, naming the variable.
func TestTransportsFor(t *testing.T) {
	job := Job{Rank: 1, Size: 4, LocalRank: 1, LocalSize: 4, JobID: "tables", Key: []byte("0123456789abcdef0123456789abcdef")}
	names := func(ts transports) []string {
		var n []string
		for _, tr := range ts.table {
			n = append(n, tr.Name())
		}
		return n
	}
	for _, tt := range []struct {
		name  string
		job   Job
		knobs tunables
		want  []string
	}{
		{"host of 4", job, tunables{}, []string{"shm", "tcp"}},
		{"HCCL_SHM_DISABLE", job, tunables{ShmDisable: true}, []string{"tcp"}},
		{"one rank", Job{Rank: 0, Size: 1, LocalSize: 1, JobID: "alone", Key: job.Key}, tunables{}, []string{"tcp"}},
	} {
		ts, err := transportsFor(tt.job, tt.knobs, "127.0.0.1", topo.Facts{CPUs: "0-3"}, 0, discard)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := names(ts); !slices.Equal(got, tt.want) {
			t.Errorf("%s: table %v, want %v", tt.name, got, tt.want)
		}
		if shmOn := tt.want[0] == "shm"; (ts.poll.Relax != nil) != shmOn {
			t.Errorf("%s: the executor polls (%v) with shared memory %v", tt.name, ts.poll.Relax != nil, shmOn)
		}
	}
	ts, err := transportsFor(job, tunables{}, "127.0.0.1", topo.Facts{CPUs: "0-3"}, 0, discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := (shmlink.Host{Ranks: 4, CPUs: 4}).Wait(); ts.poll.Spin != want.Spin || ts.poll.Yield != want.Yield {
		t.Errorf("poll spin %v yield %v, want the wait policy's %+v", ts.poll.Spin, ts.poll.Yield, want)
	}
	if _, err := transportsFor(job, tunables{BuffSize: 100}, "127.0.0.1", topo.Facts{CPUs: "0-3"}, 0, discard); err == nil || !strings.HasPrefix(err.Error(), "HCCL_BUFFSIZE: ") {
		t.Errorf("a ring of 100 bytes: %v, want an HCCL_BUFFSIZE error", err)
	}
}
