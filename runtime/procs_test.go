package runtime_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio/control"
	hccl "github.com/hcclrun/hcclrun/runtime"
)

// Ranks as real processes: the test binary re-executes itself as a rank
// (TestRankProcess, selected by HCCL_TEST_RANK_MAIN), joined through the
// environment exactly as hcclrun's ranks are, while the test plays the
// launcher's control plane.

const rankMainEnv = "HCCL_TEST_RANK_MAIN"

// outOfPlaceEnv makes the rank process's AllReduce loop run out of place.
const outOfPlaceEnv = "HCCL_TEST_OUT_OF_PLACE"

// TestRankProcess is the body of a rank process; it is skipped in a normal
// test run.
func TestRankProcess(t *testing.T) {
	if os.Getenv(rankMainEnv) == "" {
		t.Skip("only runs as a rank process started by another test")
	}
	ctx := context.Background()
	c, err := hccl.Init(ctx)
	if err != nil {
		fmt.Println("init error:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	buf := make([]float32, 1<<20)
	send := buf
	if os.Getenv(outOfPlaceEnv) != "" {
		// Out of place, the ring's first sends leave from the send
		// buffer: over shm they are read in place by the peers.
		send = make([]float32, len(buf))
	}
	for i := 0; ; i++ {
		if err := hccl.AllReduce(ctx, c, send, buf, hccl.Sum); err != nil {
			fmt.Printf("allreduce error: %v\n", err)
			os.Exit(4)
		}
	}
}

type rankProc struct {
	cmd   *exec.Cmd
	lines chan string
}

// startRankProcs starts n rank processes joined to a control server of the
// test, with extra environment.
func startRankProcs(t *testing.T, n int, extra ...string) ([]*rankProc, *control.Server) {
	t.Helper()
	key, err := wire.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := control.NewServer(control.ServerConfig{Addr: "127.0.0.1:0", Key: key, Size: n, Log: quietLogger(), AbortOnLost: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go srv.Serve(ctx)
	t.Cleanup(func() { cancel(); srv.Close() })
	procs := make([]*rankProc, n)
	for r := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRankProcess$", "-test.v")
		cmd.Env = append(os.Environ(), rankMainEnv+"=1",
			"HCCL_RANK="+strconv.Itoa(r), "HCCL_WORLD_SIZE="+strconv.Itoa(n),
			"HCCL_LOCAL_RANK="+strconv.Itoa(r), "HCCL_LOCAL_WORLD_SIZE="+strconv.Itoa(n), "HCCL_NODE_RANK=0",
			"HCCL_CONTROL_ADDR="+srv.Addr(), "HCCL_JOB_ID=proc-"+wire.EncodeKey(key[:6]),
			"HCCL_JOB_KEY="+wire.EncodeKey(key))
		cmd.Env = append(cmd.Env, extra...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &rankProc{cmd: cmd, lines: make(chan string, 64)}
		go func() {
			s := bufio.NewScanner(out)
			for s.Scan() {
				p.lines <- s.Text()
			}
			close(p.lines)
		}()
		procs[r] = p
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	return procs, srv
}

// waitLine waits for a line of p containing want.
func (p *rankProc) waitLine(t *testing.T, want string, d time.Duration) string {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("rank exited before printing %q", want)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-timeout:
			t.Fatalf("no %q within %v", want, d)
		}
	}
}

// ourShm lists the files in /dev/shm named by the given rank processes or
// by the test itself (the names shm gives where the tmpfs has no
// O_TMPFILE: "hcclrun-PID-"). Other jobs' files are not this test's.
func ourShm(t *testing.T, procs []*rankProc) []string {
	t.Helper()
	pids := []int{os.Getpid()}
	for _, p := range procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	var ours []string
	for _, pid := range pids {
		m, err := filepath.Glob("/dev/shm/hcclrun-" + strconv.Itoa(pid) + "-*")
		if err != nil {
			t.Fatal(err)
		}
		ours = append(ours, m...)
	}
	return ours
}

// plantForeign leaves in /dev/shm, until the test ends, a file such as a
// rank of another job may leave there: no leak check may take it for this
// test's. Its pid is pid_max, which no process can have.
func plantForeign(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	path := fmt.Sprintf("/dev/shm/hcclrun-%s-%x", strings.TrimSpace(string(b)), rnd)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("plant a foreign file: %v", err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(path) })
}

// TestRankKilled: SIGKILL one rank while its peers are inside AllReduce
// with it, over shared memory and over TCP: the peers fail within a few
// seconds with an error naming what happened, and /dev/shm holds nothing
// of ours afterwards.
func TestRankKilled(t *testing.T) {
	for _, tr := range []struct {
		name string
		env  []string
	}{
		{"shm", []string{"HCCL_SHM_DISABLE=0"}},
		{"shm read in place", []string{outOfPlaceEnv + "=1", "HCCL_SHM_DIRECT=1"}},
		{"tcp", []string{"HCCL_SHM_DISABLE=1"}},
	} {
		t.Run(tr.name, func(t *testing.T) {
			plantForeign(t)
			procs, _ := startRankProcs(t, 3, tr.env...)
			for _, p := range procs {
				p.waitLine(t, "ready", 30*time.Second)
			}
			time.Sleep(200 * time.Millisecond) // well inside the AllReduce loop
			victim := procs[1]
			if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			for _, r := range []int{0, 2} {
				line := procs[r].waitLine(t, "allreduce error", 5*time.Second)
				if !strings.Contains(line, "aborted") {
					t.Errorf("rank %d: %q does not say the job was aborted", r, line)
				}
				err := procs[r].cmd.Wait()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 4 {
					t.Errorf("rank %d exit: %v", r, err)
				}
				t.Logf("rank %d after %v: %s", r, time.Since(killed).Round(time.Millisecond), line)
			}
			victim.cmd.Wait()
			if left := ourShm(t, procs); len(left) > 0 {
				t.Errorf("left in /dev/shm: %v", left)
			}
		})
	}
}
