package shmlink

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// Environment of a token-ring child (besides the job and key of
// process_test.go).
const (
	ringRankEnv = "HCCLRUN_SHMLINK_TEST_RANK"
	ringSizeEnv = "HCCLRUN_SHMLINK_TEST_SIZE"
	ringLapsEnv = "HCCLRUN_SHMLINK_TEST_LAPS"
	ringTagEnv  = "HCCLRUN_SHMLINK_TEST_TAG"
)

const stopSeq = ^uint64(0)

// runTokenRing is one rank of a ring of processes that pass a token
// around: each rank links to its two neighbours (the lower rank of a pair
// listens), rank 0 starts the token and times the laps. Between "go" on
// stdin and the end, each rank measures its own CPU time and prints
// "cpu <ns>"; rank 0 also prints "laps <ns> <ns> ...".
func runTokenRing() error {
	key, err := hex.DecodeString(os.Getenv(childKeyEnv))
	if err != nil {
		return err
	}
	job := os.Getenv(childJobEnv)
	rank, _ := strconv.Atoi(os.Getenv(ringRankEnv))
	size, _ := strconv.Atoi(os.Getenv(ringSizeEnv))
	laps, _ := strconv.Atoi(os.Getenv(ringLapsEnv))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The ranks share a tag, so that each knows its neighbours' names
	// without a control plane.
	tag := os.Getenv(ringTagEnv)
	ln, err := ListenConfig{Tag: tag}.Listen(job, rank, key, nil)
	if err != nil {
		return err
	}
	defer ln.Close()
	fmt.Println("listening")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "go" {
		return errors.New("no go")
	}
	next, prev := (rank+1)%size, (rank+size-1)%size
	links := map[int]*Link{}
	accepts := 0
	for _, p := range []int{next, prev} {
		if p > rank {
			accepts++
			continue
		}
		addr, err := socketName(job, p, tag)
		if err != nil {
			return err
		}
		l, err := Dial(ctx, DialConfig{JobID: job, Addr: addr, Key: key, Self: rank, Peer: p, RingBytes: 64 << 10})
		if err != nil {
			return err
		}
		links[p] = l
	}
	for ; accepts > 0; accepts-- {
		l, p, err := ln.Accept(ctx)
		if err != nil {
			return err
		}
		links[p] = l
	}
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	to, from := links[next], links[prev]

	cpu := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before := cpu()
	tok := make([]byte, 8)
	var h wire.Header
	pass := func(seq uint64) error {
		h = wire.Header{Seq: seq, Src: uint32(rank), Len: 8}
		return to.Send(ctx, &h, tok)
	}
	take := func() (uint64, error) {
		if err := from.RecvHeader(ctx, &h); err != nil {
			return 0, err
		}
		return h.Seq, from.RecvPayload(ctx, tok)
	}
	var lapTimes []string
	if rank == 0 {
		for lap := 0; lap < laps; lap++ {
			start := time.Now()
			if err := pass(uint64(lap)); err != nil {
				return err
			}
			if seq, err := take(); err != nil || seq != uint64(lap) {
				return fmt.Errorf("lap %d came back as %d: %v", lap, seq, err)
			}
			lapTimes = append(lapTimes, strconv.FormatInt(int64(time.Since(start)), 10))
		}
		if err := pass(stopSeq); err != nil {
			return err
		}
		if _, err := take(); err != nil {
			return err
		}
	} else {
		for {
			seq, err := take()
			if err != nil {
				return err
			}
			if err := pass(seq); err != nil {
				return err
			}
			if seq == stopSeq {
				break
			}
		}
	}
	fmt.Println("cpu", int64(cpu()-before))
	if rank == 0 {
		fmt.Println("laps", strings.Join(lapTimes, " "))
	}
	// Stay until the successor has taken the stop token: closing now
	// would not lose it (a closed ring is drained first), but keep the
	// exit orderly anyway.
	in.Scan()
	return nil
}

// TestOversubscribedTokenRing runs 8 ranks as 8 processes on this 2-core
// machine and passes a token around them. At any moment one rank works
// and seven wait; waiting must cost (almost) nothing, or the token would
// crawl while waiting ranks burn the cores it needs. The test asserts the
// CPU time per hop and reports the median hop latency.
func TestOversubscribedTokenRing(t *testing.T) {
	const size, laps = 8, 300
	job, key, tag := newJobID(), newKey(t), randomTag()
	type rank struct {
		cmd   *exec.Cmd
		out   *bufio.Scanner
		stdin *os.File
	}
	ranks := make([]rank, size)
	for r := range ranks {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childRoleEnv+"=token-ring", childJobEnv+"="+job,
			childKeyEnv+"="+hex.EncodeToString(key), ringRankEnv+"="+strconv.Itoa(r),
			ringSizeEnv+"="+strconv.Itoa(size), ringLapsEnv+"="+strconv.Itoa(laps), ringTagEnv+"="+tag)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = pr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pr.Close()
		ranks[r] = rank{cmd, bufio.NewScanner(out), pw}
		t.Cleanup(func() {
			pw.Close()
			cmd.Process.Kill() // by PID
			cmd.Wait()
		})
	}
	readLine := func(r int, prefix string) string {
		t.Helper()
		c := make(chan string, 1)
		go func() {
			for ranks[r].out.Scan() {
				if l := ranks[r].out.Text(); strings.HasPrefix(l, prefix) {
					c <- l
					return
				}
			}
			c <- ""
		}()
		select {
		case l := <-c:
			if l == "" {
				t.Fatalf("rank %d ended without printing %q", r, prefix)
			}
			return l
		case <-time.After(90 * time.Second):
			t.Fatalf("rank %d did not print %q within 90 s", r, prefix)
		}
		return ""
	}
	for r := range ranks {
		readLine(r, "listening")
	}
	start := time.Now()
	for r := range ranks {
		fmt.Fprintln(ranks[r].stdin, "go")
	}
	var cpu time.Duration
	var lapLine string
	for r := range ranks {
		ns, _ := strconv.ParseInt(strings.Fields(readLine(r, "cpu "))[1], 10, 64)
		cpu += time.Duration(ns)
		if r == 0 {
			lapLine = readLine(0, "laps ")
		}
	}
	wall := time.Since(start)
	for r := range ranks {
		ranks[r].stdin.Close()
		if err := ranks[r].cmd.Wait(); err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	var lapsNs []int64
	for _, f := range strings.Fields(lapLine)[1:] {
		v, _ := strconv.ParseInt(f, 10, 64)
		lapsNs = append(lapsNs, v)
	}
	slices.Sort(lapsNs)
	hops := size * (laps + 1)
	medianHop := time.Duration(lapsNs[len(lapsNs)/2] / size)
	perHop := cpu / time.Duration(hops)
	t.Logf("%d ranks, %d hops in %v: median hop %v, CPU %v in all (%v per hop, %.2f cores busy on average)",
		size, hops, wall.Round(time.Millisecond), medianHop, cpu.Round(time.Millisecond), perHop, cpu.Seconds()/wall.Seconds())
	if perHop > 500*time.Microsecond {
		t.Errorf("%v of CPU per hop: waiting ranks burn CPU", perHop)
	}
}
