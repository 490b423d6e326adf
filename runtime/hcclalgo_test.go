package runtime_test

import (
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"testing"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestHCCLAlgoGrammar: HCCL's own HCCL_ALGO forms run a job, on one server
// (level0 decides: NA, the selector's choice) and on two (level1 decides),
// every collective checked exactly, and each call chose what the mapping
// says (docs/selector.md#hccls-own-grammar).
func TestHCCLAlgoGrammar(t *testing.T) {
	types := []typeCheck{matrixTypes[4], matrixTypes[10]} // int32, float32
	hdr := []string{"hier", "rhd", "tree"}
	for _, tt := range []struct {
		spec string
		// on two servers, the algorithms each collective may choose
		// (unlisted collectives are not constrained)
		want map[string][]string
	}{
		{"level0:NA;level1:H-D_R", map[string][]string{"AllReduce": hdr, "AllGather": hdr, "ReduceScatter": hdr, "Broadcast": hdr, "Reduce": hdr}},
		{"allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:H-D_R", map[string][]string{"AllReduce": {"ring"}, "AllGather": hdr}},
	} {
		for _, servers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/servers%d", tt.spec, servers), func(t *testing.T) {
				t.Setenv("HCCL_ALGO", tt.spec)
				var log syncbuf.Buffer
				logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
				per := 0
				if servers == 2 {
					per = 3
				}
				j := newJobPerServer(t, 6, per, hccl.WithLogger(logger))
				j.t = t
				runMatrixOn(t, j, types, []int{0, 1, 7, 1000})
				chosen := regexp.MustCompile(`coll=(\w+) .*servers=(\d+) algo=(\w+)`).FindAllStringSubmatch(log.Take(), -1)
				if len(chosen) == 0 {
					t.Fatal("no algorithm chosen was logged")
				}
				for _, m := range chosen {
					if m[2] != fmt.Sprint(servers) {
						t.Errorf("a call priced on %s servers, want %d", m[2], servers)
					}
					if ok := tt.want[m[1]]; servers == 2 && ok != nil && !slices.Contains(ok, m[3]) {
						t.Errorf("%s on %d servers chose %s, want one of %v", m[1], servers, m[3], ok)
					}
				}
			})
		}
	}
	// A value we cannot serve fails Init, naming it.
	t.Setenv("HCCL_ALGO", "level0:NA;level1:AHC")
	_, err := hccl.Init(ctxFor(t), hccl.WithJob(hccl.Job{Rank: 0, Size: 1, ControlAddr: "127.0.0.1:1"}), hccl.WithLogger(quietLogger()))
	if err == nil || !regexp.MustCompile(`AHC.*level1 accepts NA, ring, H-D_R`).MatchString(err.Error()) {
		t.Errorf("HCCL_ALGO=level0:NA;level1:AHC: Init = %v, want an error naming AHC and what level1 accepts", err)
	}
}
