package launcher

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestHeartbeatTimeoutFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		own     string // the launcher's value; "-" unset
		exports []string
		want    time.Duration
		bad     bool
	}{
		{"unset", "-", nil, 0, false},
		{"empty", "", nil, 0, false},
		{"seconds", "3", nil, 3 * time.Second, false},
		{"fraction", "1.5", nil, 1500 * time.Millisecond, false},
		{"spaces", " 20 ", nil, 20 * time.Second, false},
		{"a day", "86400", nil, 24 * time.Hour, false},
		{"-x sets it", "-", []string{"A=1", "HCCL_HEARTBEAT_TIMEOUT=4"}, 4 * time.Second, false},
		{"-x wins over the launcher's", "3", []string{"HCCL_HEARTBEAT_TIMEOUT=5"}, 5 * time.Second, false},
		{"last -x wins", "-", []string{"HCCL_HEARTBEAT_TIMEOUT=5", "HCCL_HEARTBEAT_TIMEOUT=6"}, 6 * time.Second, false},
		{"bad -x over a good one", "3", []string{"HCCL_HEARTBEAT_TIMEOUT=x"}, 0, true},
		{"word", "soon", nil, 0, true},
		{"duration", "500ms", nil, 0, true},
		{"zero", "0", nil, 0, true},
		{"negative", "-3", nil, 0, true},
		{"the heartbeat interval", "0.5", nil, 0, true},
		{"over a day", "86401", nil, 0, true},
		{"NaN", "NaN", nil, 0, true},
		{"Inf", "+Inf", nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(name string) (string, bool) {
				if name != EnvHeartbeatTimeout || tt.own == "-" {
					return "", false
				}
				return tt.own, true
			}
			got, err := heartbeatTimeout(tt.exports, lookup)
			if tt.bad {
				if err == nil || !errors.Is(err, ErrUsage) || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "HCCL_HEARTBEAT_TIMEOUT=") {
					t.Fatalf("got %v, %v; want a usage error naming HCCL_HEARTBEAT_TIMEOUT", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestHeartbeatTimeoutUsage: a bad HCCL_HEARTBEAT_TIMEOUT, the launcher's
// own or given with -x, stops the job before any rank starts, with exit
// code 2.
func TestHeartbeatTimeoutUsage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		own    string
		export []string
	}{
		{"own", "3s", nil},
		{"-x", "", []string{"HCCL_HEARTBEAT_TIMEOUT=0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.own != "" {
				t.Setenv(EnvHeartbeatTimeout, tc.own)
			} else {
				t.Setenv(EnvHeartbeatTimeout, "") // empty is unset
			}
			dir := t.TempDir()
			job := &Job{Program: rankProg, NP: 2, Export: tc.export, Args: script(dir, "echo", "started")}
			res := runJob(t, job, 10*time.Second)
			if ExitCode(res.err) != ExitUsage || !strings.Contains(res.err.Error(), "HCCL_HEARTBEAT_TIMEOUT=") {
				t.Fatalf("Run: %v (code %d), want a usage error naming HCCL_HEARTBEAT_TIMEOUT", res.err, ExitCode(res.err))
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Fatalf("ranks started despite the usage error: %v", ents)
			}
		})
	}
}

// TestLostRankHeartbeatTimeout: HCCL_HEARTBEAT_TIMEOUT reaches the control
// server (here with -x): a stopped rank is lost after it and one heartbeat
// interval, not after the default, and the summary reads as for any lost
// rank.
func TestLostRankHeartbeatTimeout(t *testing.T) {
	dir := t.TempDir()
	job := &Job{Program: rankProg, NP: 3, Grace: time.Second, Export: []string{"HCCL_HEARTBEAT_TIMEOUT=1.5"},
		Args: script(dir, "join", "ready", "DIR", "await@1", "DIR", "3", "stamp@1", "DIR", "stop@1", "sleep", "60s")}
	res := runJob(t, job, 30*time.Second)
	noLeftovers(t, dir)
	var re *RankError
	if !errors.As(res.err, &re) || !re.Lost || re.Rank != 1 || ExitCode(res.err) != 1 {
		t.Fatalf("Run: %v, want rank 1 lost, exit code 1", res.err)
	}
	if !regexp.MustCompile(`^rank 1 \(pid \d+ on \S+\) lost its control connection while running; terminated 2 other ranks$`).MatchString(re.Error()) {
		t.Fatalf("summary %q", re.Error())
	}
	stopped := readStamp(t, dir, 1)
	// Lost 1.5 s and the 0.5 s grace after its last heartbeat (at most a
	// heartbeat before it stopped), failed lostWindow later; the default
	// would take over 10 s.
	if d := res.end.Sub(stopped); d < 1500*time.Millisecond || d > 7*time.Second {
		t.Fatalf("job down %v after the rank stopped, want about 2.5 s", d)
	} else {
		t.Logf("stopped rank lost and job down %v after it stopped", d)
	}
}

// readStamp returns the time rank wrote to dir with the stamp step.
func readStamp(t *testing.T, dir string, rank int) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(rank)+".stamp"))
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(0, ns)
}
