package launcher

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalForwarding sends the launcher SIGINT (through Job.Signals, as
// the CLI does after signal.Notify) once every rank is ready.
func TestSignalForwarding(t *testing.T) {
	tests := []struct {
		name     string
		steps    []string
		signals  []syscall.Signal
		grace    time.Duration
		within   time.Duration // Run returns this soon after the first signal
		wantCode int
		killed   bool
		trapped  bool // every rank printed "trapped INT"
	}{
		{
			name:    "SIGINT reaches every rank",
			steps:   []string{"trap", "INT", "0", "ready", "DIR", "sleep", "30s"},
			signals: []syscall.Signal{syscall.SIGINT}, grace: 10 * time.Second,
			within: 2 * time.Second, wantCode: 130, trapped: true,
		},
		{
			name:    "SIGTERM reaches every rank",
			steps:   []string{"ready", "DIR", "sleep", "30s"},
			signals: []syscall.Signal{syscall.SIGTERM}, grace: 10 * time.Second,
			within: 2 * time.Second, wantCode: 143,
		},
		{
			name:    "SIGINT ignored: SIGKILL after the grace",
			steps:   []string{"ignore", "INT", "ready", "DIR", "sleep", "30s"},
			signals: []syscall.Signal{syscall.SIGINT}, grace: 500 * time.Millisecond,
			within: 1500 * time.Millisecond, wantCode: 130,
		},
		{
			name:    "second SIGINT kills at once",
			steps:   []string{"ignore", "INT", "ready", "DIR", "sleep", "30s"},
			signals: []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, grace: 30 * time.Second,
			within: 2 * time.Second, wantCode: 130, killed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			sigs := make(chan os.Signal, len(tt.signals))
			job := &Job{Program: rankProg, Args: script(dir, tt.steps...), NP: 3, Grace: tt.grace, Signals: sigs}
			var sent time.Time
			go func() {
				waitFiles(t, dir, ".ready", 3, 10*time.Second)
				sent = time.Now()
				for _, s := range tt.signals {
					sigs <- s
					time.Sleep(200 * time.Millisecond)
				}
			}()
			res := runJob(t, job, 20*time.Second)
			noLeftovers(t, dir)
			if sent.IsZero() {
				t.Fatalf("the job ended before the signal: %v", res.err)
			}
			if d := res.end.Sub(sent); d > tt.within {
				t.Fatalf("Run returned %v after the signal, want within %v", d, tt.within)
			}
			var ie *InterruptError
			if !errors.As(res.err, &ie) || ExitCode(res.err) != tt.wantCode || ie.Killed != tt.killed || ie.Terminated != 3 {
				t.Fatalf("Run: %v (%+v), exit code %d; want an interrupt, code %d, killed %v, 3 ranks", res.err, ie, ExitCode(res.err), tt.wantCode, tt.killed)
			}
			if tt.trapped {
				for _, r := range []string{"0", "1", "2"} {
					if !strings.Contains(res.stdout.String(), "rank "+r+" trapped INT") {
						t.Errorf("rank %s did not get SIGINT; stdout:\n%s", r, res.stdout)
					}
				}
			}
		})
	}
}

// TestTimeout checks the whole-job limit: the job is torn down, the error
// says so, and the exit code is 124.
func TestTimeout(t *testing.T) {
	dir := t.TempDir()
	// The limit leaves the ranks time to record their pids even on a
	// loaded machine.
	const limit = 1500 * time.Millisecond
	job := &Job{Program: rankProg, Args: script(dir, "sleep", "30s"), NP: 3, Timeout: limit, Grace: time.Second}
	res := runJob(t, job, 10*time.Second)
	noLeftovers(t, dir)
	var te *TimeoutError
	if !errors.As(res.err, &te) || ExitCode(res.err) != 124 {
		t.Fatalf("Run: %v, exit code %d; want a timeout, 124", res.err, ExitCode(res.err))
	}
	if want := "job timed out after 1.5s; terminated 3 ranks"; res.err.Error() != want {
		t.Fatalf("message %q, want %q", res.err.Error(), want)
	}
	if res.elapsed < limit || res.elapsed > limit+time.Second {
		t.Fatalf("took %v with a limit of %v", res.elapsed, limit)
	}
}

// TestTimeoutNotReached: a job that ends in time is not affected.
func TestTimeoutNotReached(t *testing.T) {
	dir := t.TempDir()
	job := &Job{Program: rankProg, Args: script(dir, "sleep", "50ms"), NP: 2, Timeout: 10 * time.Second}
	res := runJob(t, job, 10*time.Second)
	noLeftovers(t, dir)
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
}

// TestGrandchildrenKilled: a rank's children die with its process group,
// both when the job is torn down and when the rank exits normally.
func TestGrandchildrenKilled(t *testing.T) {
	tests := []struct {
		name  string
		steps []string
		code  int
	}{
		{"teardown", []string{"child", "DIR", "ready", "DIR", "await@1", "DIR", "3", "exit@1", "3", "sleep", "30s"}, 3},
		{"clean exit", []string{"child", "DIR", "exit", "0"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			job := &Job{Program: rankProg, Args: script(dir, tt.steps...), NP: 3, Grace: time.Second}
			res := runJob(t, job, 10*time.Second)
			if n := len(readPids(t, dir, ".child")); n != 3 {
				t.Fatalf("%d grandchildren recorded, want 3", n)
			}
			noLeftovers(t, dir)
			if ExitCode(res.err) != tt.code {
				t.Fatalf("Run: %v, want exit code %d", res.err, tt.code)
			}
		})
	}
}
