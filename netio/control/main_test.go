package control

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// The tests re-execute their own binary as a child process to get a rank
// or a server that can be SIGKILLed or SIGSTOPped for real. The child's
// role comes from the environment.
const (
	envRole = "HCCL_CONTROL_TEST_ROLE" // "client" or "server"
	envAddr = "HCCL_CONTROL_TEST_ADDR"
	envKey  = "HCCL_CONTROL_TEST_KEY"
	envRank = "HCCL_CONTROL_TEST_RANK"
	envSize = "HCCL_CONTROL_TEST_SIZE"
	envSeq  = "HCCL_CONTROL_TEST_SEQ" // a client's progress: "4" (after call 4) or "4+" (in call 4)
)

func TestMain(m *testing.M) {
	switch os.Getenv(envRole) {
	case "":
		os.Exit(m.Run())
	case "client":
		os.Exit(childClient())
	case "server":
		os.Exit(childServer())
	}
	os.Exit(3)
}

// childClient joins, sets its progress from envSeq if given, announces
// itself with a Put and waits to be killed
// (at most a minute, so that a broken test leaves no orphan for long).
func childClient() int {
	key, err := wire.ParseKey(os.Getenv(envKey))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rank, _ := strconv.Atoi(os.Getenv(envRank))
	size, _ := strconv.Atoi(os.Getenv(envSize))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Dial(ctx, os.Getenv(envAddr), key, rank, size, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if p := os.Getenv(envSeq); p != "" {
		inCall := strings.HasSuffix(p, "+")
		seq, err := strconv.ParseUint(strings.TrimSuffix(p, "+"), 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		c.SetProgress(seq, inCall)
	}
	if err := c.Put(ctx, fmt.Sprintf("child/%d", rank), []byte("ready")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	select {
	case <-ctx.Done():
	case <-c.Done():
	}
	return 0
}

// childServer serves a job and prints its address on stdout.
func childServer() int {
	key, err := wire.ParseKey(os.Getenv(envKey))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	size, _ := strconv.Atoi(os.Getenv(envSize))
	s, err := NewServer(ServerConfig{Addr: "127.0.0.1:0", Key: key, Size: size,
		HeartbeatInterval: 100 * time.Millisecond, LostAfter: 600 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println(s.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		for range s.Events() {
		}
	}()
	if err := s.Serve(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}
