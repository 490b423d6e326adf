package multihost

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/testhosts"
)

// hierSpec forces hier for every collective it serves.
const hierSpec = "allreduce:hier;allgather:hier;reducescatter:hier;broadcast:hier;reduce:hier"

// TestUnevenHosts: servers of different sizes (3+2+1, 2+1, 1+2, 3+1) are
// as many servers, every collective of the check is exact on them with the
// selector's choices and with hier forced, HCCL_DEBUG=INFO says servers=N,
// and forcing mesh, which runs within one server, fails with an error
// naming it and the servers.
func TestUnevenHosts(t *testing.T) {
	e := testhosts.Require(t, 2)
	b := binaries(t)
	// Beyond the harness's hosts, this machine is one more (the launcher
	// runs its ranks locally): 3+2+1 runs while only two hosts are up.
	self, _ := os.Hostname()
	host := func(i int) (hostfileName, hostname string) {
		if i < len(e.Names) {
			return e.Names[i], e.Names[i]
		}
		return "localhost", self
	}
	hostfile := func(slots ...int) string {
		var lines []string
		for i, s := range slots {
			name, _ := host(i)
			lines = append(lines, fmt.Sprintf("%s slots=%d", name, s))
		}
		hf := filepath.Join(t.TempDir(), "hostfile")
		if err := os.WriteFile(hf, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return hf
	}
	for _, tc := range []struct {
		name  string
		slots []int
	}{
		{"3+2+1", []int{3, 2, 1}},
		{"2+1", []int{2, 1}},
		{"1+2", []int{1, 2}},
		{"3+1", []int{3, 1}},
	} {
		if len(tc.slots) > len(e.Names)+1 {
			t.Logf("%s: the harness has %d hosts, the layout needs %d", tc.name, len(e.Names), len(tc.slots))
			continue
		}
		np := 0
		for _, s := range tc.slots {
			np += s
		}
		// where says the host and local rank of each rank: contiguous,
		// host by host.
		var where []string
		for h, s := range tc.slots {
			for l := range s {
				_, name := host(h)
				where = append(where, fmt.Sprintf("%s %d/%d", name, l, s))
			}
		}
		hf := hostfile(tc.slots...)
		okLine := regexp.MustCompile(fmt.Sprintf(`(?m)^rank (\d+)/%d ok host=(\S+) local=(\d+)/(\d+)$`, np))
		for _, algo := range []string{"", hierSpec} {
			name := tc.name + "/chosen"
			if algo != "" {
				name = tc.name + "/hier"
			}
			t.Run(name, func(t *testing.T) {
				args := append(hostArgs(e, hf), "-np", strconv.Itoa(np), "-x", "HCCL_DEBUG=INFO")
				if algo != "" {
					args = append(args, "-x", "HCCL_ALGO="+algo)
				}
				for _, count := range []string{"0", "1", "1001", "70000"} {
					r := hcclrun(t, b, 2*time.Minute, append(args, filepath.Join(b, "collcheck"), "-count", count)...)
					if r.code != 0 {
						t.Fatalf("-count %s: exit %d\nstdout:\n%s\nstderr:\n%s", count, r.code, r.stdout, r.stderr)
					}
					ms := okLine.FindAllStringSubmatch(r.stdout, -1)
					if len(ms) != np {
						t.Fatalf("-count %s: %d ranks report ok, want %d:\n%s", count, len(ms), np, r.stdout)
					}
					for _, m := range ms {
						rank, _ := strconv.Atoi(m[1])
						if got := m[2] + " " + m[3] + "/" + m[4]; got != where[rank] {
							t.Errorf("rank %d ran as %s, want %s", rank, got, where[rank])
						}
					}
					want := fmt.Sprintf("servers=%d", len(tc.slots))
					if !strings.Contains(r.stderr, want) || regexp.MustCompile(`servers=[^`+strconv.Itoa(len(tc.slots))+`]`).MatchString(r.stderr) {
						t.Errorf("-count %s: HCCL_DEBUG=INFO does not say %s alone:\n%s", count, want, r.stderr)
					}
					if algo != "" && !strings.Contains(r.stderr, "algo=hier") {
						t.Errorf("-count %s: no call logs algo=hier:\n%s", count, r.stderr)
					}
				}
			})
		}
	}
	t.Run("2+1/mesh refused", func(t *testing.T) {
		hf := hostfile(2, 1)
		r := hcclrun(t, b, 2*time.Minute, append(hostArgs(e, hf), "-np", "3", "-x", "HCCL_ALGO=broadcast:mesh", filepath.Join(b, "collcheck"), "-count", "10")...)
		if r.code == 0 {
			t.Fatalf("forced mesh across 2 servers ran:\n%s", r.stdout)
		}
		all := r.stdout + r.stderr
		if !strings.Contains(all, "mesh runs within one server, the job spans 2 servers") {
			t.Errorf("exit %d without naming mesh and the 2 servers:\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
	})
}
