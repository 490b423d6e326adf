// Command rankprog is the rank program of the launcher's tests. Its arguments
// are a script of steps run in order; a step written name@R runs on rank R
// only (the rank is HCCL_RANK). Steps:
//
//	pid DIR        write DIR/<rank>.pid: "pid pgid"
//	child DIR      start a grandchild (sleep) in the rank's group, write DIR/<rank>.child: its pid
//	ready DIR      create DIR/<rank>.ready
//	await DIR N    wait until DIR holds N .ready files
//	gone DIR N     wait until N ranks recorded in DIR (pid step) no longer exist
//	stamp DIR      write DIR/<rank>.stamp: the time in Unix nanoseconds
//	table          print the rank table file
//	ignore SIG     ignore a signal (TERM, INT)
//	trap SIG CODE  exit with CODE when SIG arrives
//	exit CODE      exit with CODE
//	kill SIG       kill itself with SIG
//	sleep DUR      sleep (Go duration)
//	env            print every variable as NAME=value, then the rank table's mode as "TABLE_MODE=0600"
//	args           print each remaining argument as "arg: %q" and stop
//	spam N LEN     print N lines of LEN bytes in writes of odd sizes
//	cat            copy stdin to stdout
//	echo TEXT      print TEXT
//	join           connect to the control plane (HCCL_CONTROL_ADDR, HCCL_JOB_KEY)
//	barrier NAME   meet every rank in a control-plane barrier
//	abort REASON   abort the job through the control plane
//	onabort CODE   when the job is aborted, print the abort and exit with CODE
//	leave          close the control connection in order
//	stop           stop itself with SIGSTOP (heartbeats stop: the rank is lost)
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio/control"
)

var rank = os.Getenv("HCCL_RANK")

// client is the control-plane connection opened by the join step.
var client *control.Client

func join() {
	key, err := wire.ParseKey(os.Getenv("HCCL_JOB_KEY"))
	if err != nil {
		fail("join: %v", err)
	}
	size, r := atoi(os.Getenv("HCCL_WORLD_SIZE")), atoi(rank)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client, err = control.Dial(ctx, os.Getenv("HCCL_CONTROL_ADDR"), key, r, size, nil)
	if err != nil {
		fail("join: %v", err)
	}
}

func main() {
	args := os.Args[1:]
	for len(args) > 0 {
		step := args[0]
		args = args[1:]
		name, only, filtered := strings.Cut(step, "@")
		n := arity(name)
		if n < 0 {
			fail("unknown step %q", step)
		}
		if name == "args" {
			n = len(args)
		}
		if len(args) < n {
			fail("step %q needs %d arguments", step, n)
		}
		params := args[:n]
		args = args[n:]
		if filtered && only != rank {
			continue
		}
		run(name, params)
	}
}

func arity(name string) int {
	switch name {
	case "env", "cat", "args", "table", "join", "leave", "stop":
		return 0
	case "barrier", "abort", "onabort",
		"pid", "child", "ready", "stamp", "ignore", "exit", "kill", "sleep", "echo":
		return 1
	case "trap", "spam", "await", "gone":
		return 2
	}
	return -1
}

func run(name string, p []string) {
	switch name {
	case "pid":
		write(p[0], "pid", fmt.Sprintf("%d %d\n", os.Getpid(), syscall.Getpgrp()))
	case "child":
		c := exec.Command("sleep", "3600")
		if err := c.Start(); err != nil {
			fail("child: %v", err)
		}
		write(p[0], "child", fmt.Sprintf("%d\n", c.Process.Pid))
	case "ready":
		write(p[0], "ready", "")
	case "await":
		n := atoi(p[1])
		for {
			m, _ := filepath.Glob(filepath.Join(p[0], "*.ready"))
			if len(m) >= n {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	case "gone":
		n := atoi(p[1])
		for {
			m, _ := filepath.Glob(filepath.Join(p[0], "*.pid"))
			dead := 0
			for _, f := range m {
				b, _ := os.ReadFile(f)
				var pid int
				if _, err := fmt.Sscan(string(b), &pid); err == nil && syscall.Kill(pid, 0) == syscall.ESRCH {
					dead++
				}
			}
			if dead >= n {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	case "stamp":
		write(p[0], "stamp", strconv.FormatInt(time.Now().UnixNano(), 10))
	case "table":
		b, err := os.ReadFile(os.Getenv("HCCL_RANK_TABLE_FILE"))
		if err != nil {
			fail("table: %v", err)
		}
		os.Stdout.Write(b)
	case "ignore":
		signal.Ignore(sig(p[0]))
	case "trap":
		code := atoi(p[1])
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, sig(p[0]))
		go func() {
			<-ch
			fmt.Printf("rank %s trapped %s\n", rank, p[0])
			os.Exit(code)
		}()
	case "exit":
		os.Exit(atoi(p[0]))
	case "kill":
		s := sig(p[0])
		signal.Reset(s)
		syscall.Kill(os.Getpid(), s)
		time.Sleep(10 * time.Second)
		fail("still alive after kill %s", p[0])
	case "sleep":
		d, err := time.ParseDuration(p[0])
		if err != nil {
			fail("sleep: %v", err)
		}
		time.Sleep(d)
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		if fi, err := os.Stat(os.Getenv("HCCL_RANK_TABLE_FILE")); err == nil {
			fmt.Printf("TABLE_MODE=%04o\n", fi.Mode().Perm())
		} else {
			fmt.Printf("TABLE_MODE=%v\n", err)
		}
	case "args":
		for _, a := range p {
			fmt.Printf("arg: %q\n", a)
		}
	case "spam":
		spam(atoi(p[0]), atoi(p[1]))
	case "cat":
		io.Copy(os.Stdout, os.Stdin)
	case "echo":
		fmt.Println(p[0])
	case "join":
		join()
	case "barrier":
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := client.Barrier(ctx, p[0]); err != nil {
			fail("barrier: %v", err)
		}
	case "abort":
		if err := client.Abort(p[0]); err != nil {
			fail("abort: %v", err)
		}
	case "onabort":
		code := atoi(p[0])
		go func() {
			<-client.Done()
			fmt.Printf("rank %s: %v\n", rank, client.Err())
			os.Exit(code)
		}()
	case "leave":
		if err := client.Close(); err != nil {
			fail("leave: %v", err)
		}
	case "stop":
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}
}

// spam writes n lines "rank R line I xxxx...x" padded to size bytes
// (newline included), in writes whose sizes do not follow line boundaries.
func spam(n, size int) {
	var all bytes.Buffer
	for i := 0; i < n; i++ {
		line := fmt.Sprintf("rank %s line %d ", rank, i)
		if pad := size - len(line) - 1; pad > 0 {
			line += strings.Repeat(string(rune('a'+i%26)), pad)
		}
		all.WriteString(line + "\n")
	}
	b := all.Bytes()
	chunk := 1
	for len(b) > 0 {
		k := min(chunk, len(b))
		if _, err := os.Stdout.Write(b[:k]); err != nil {
			fail("spam: %v", err)
		}
		b = b[k:]
		chunk = chunk*7%100003 + 1 // 1, 8, 57, 400, ... odd sizes up to ~100 KB
	}
}

func write(dir, kind, content string) {
	path := filepath.Join(dir, rank+"."+kind)
	if err := os.WriteFile(path+".tmp", []byte(content), 0o644); err != nil {
		fail("%s: %v", kind, err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		fail("%s: %v", kind, err)
	}
}

func sig(name string) syscall.Signal {
	switch name {
	case "TERM":
		return syscall.SIGTERM
	case "INT":
		return syscall.SIGINT
	case "KILL":
		return syscall.SIGKILL
	case "SEGV":
		return syscall.SIGSEGV
	case "HUP":
		return syscall.SIGHUP
	case "USR1":
		return syscall.SIGUSR1
	}
	fail("unknown signal %q", name)
	return 0
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail("%v", err)
	}
	return n
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rankprog: rank %s: "+format+"\n", append([]any{os.Getenv("HCCL_RANK")}, args...)...)
	os.Exit(99)
}
