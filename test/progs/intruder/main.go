// Command intruder is the other local user of the fault suite's
// shared-memory cases (package test/fault, shmintruder_test.go). Run under
// an unprivileged uid, it attacks one job's shared-memory sockets as a
// hostile user of the machine could: their names are abstract (no
// permissions) and /proc/net/unix lists them.
//
//	intruder squat -job ID -ranks N [-tag T]
//	    waits until /proc/net/unix shows a socket of job ID, then binds
//	    every name it can guess for ranks 0..N-1: the names ranks used
//	    before names had a random tag (@hcclrun/ID/R) and, with -tag,
//	    @hcclrun/ID/R/T. Prints "bound NAME" for each name taken, then
//	    "squatted N", and holds the names until stdin closes.
//	intruder flood -prefix P -conns N -for D
//	    waits for a listening socket named P or P/..., opens N
//	    connections to it and holds them, re-opening every 200 ms those
//	    the listener closed, until D has passed. Prints "flooding NAME N"
//	    once the N are tried, then "done opened=.. closed=.. failed=..".
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: intruder squat|flood ..."))
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	job := fs.String("job", "", "squat: the job id")
	ranks := fs.Int("ranks", 4, "squat: ranks whose names to take")
	tag := fs.String("tag", "", "squat: the tag of the ranks' names, if known")
	prefix := fs.String("prefix", "", "flood: the socket name, up to its tag")
	conns := fs.Int("conns", 1000, "flood: connections to hold")
	dur := fs.Duration("for", 10*time.Second, "flood: how long")
	fs.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "squat":
		err = squat(*job, *ranks, *tag)
	case "flood":
		err = flood(*prefix, *conns, *dur)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "intruder:", err)
	os.Exit(1)
}

// listening returns the abstract names of the listening unix sockets in
// /proc/net/unix, with their leading '@'.
func listening() ([]string, error) {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ln := range strings.Split(string(b), "\n")[1:] {
		// Num RefCount Protocol Flags Type St Inode Path
		fs := strings.Fields(ln)
		if len(fs) >= 8 && fs[3] == "00010000" && strings.HasPrefix(fs[7], "@") {
			names = append(names, fs[7])
		}
	}
	return names, nil
}

// waitFor polls /proc/net/unix until a listening name satisfies match.
func waitFor(match func(string) bool) (string, error) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		names, err := listening()
		if err != nil {
			return "", err
		}
		for _, n := range names {
			if match(n) {
				return n, nil
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return "", errors.New("no matching socket within 60 s")
}

func squat(job string, ranks int, tag string) error {
	if job == "" {
		return errors.New("squat: -job is required")
	}
	prefix := "@hcclrun/" + job + "/"
	if _, err := waitFor(func(n string) bool { return strings.HasPrefix(n, prefix) }); err != nil {
		return err
	}
	var held []*net.UnixListener
	for r := range ranks {
		names := []string{fmt.Sprintf("%s%d", prefix, r)}
		if tag != "" {
			names = append(names, fmt.Sprintf("%s%d/%s", prefix, r, tag))
		}
		for _, name := range names {
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
			if err != nil {
				continue // the rank was first
			}
			held = append(held, ln)
			fmt.Println("bound", name)
		}
	}
	fmt.Println("squatted", len(held))
	io.Copy(io.Discard, os.Stdin)
	for _, ln := range held {
		ln.Close()
	}
	return nil
}

func flood(prefix string, n int, dur time.Duration) error {
	name, err := waitFor(func(s string) bool { return s == prefix || strings.HasPrefix(s, prefix+"/") })
	if err != nil {
		return err
	}
	var opened, closed, failed int
	conns := make([]net.Conn, n)
	open := func() {
		for i, c := range conns {
			if c != nil {
				continue
			}
			c, err := net.Dial("unix", name)
			if err != nil {
				failed++
				continue
			}
			opened++
			conns[i] = c
		}
	}
	// closedByPeer reports whether the listener closed c: a read that
	// does not block finds EOF (or a reset) instead of nothing.
	buf := make([]byte, 64)
	closedByPeer := func(c net.Conn) bool {
		raw, err := c.(*net.UnixConn).SyscallConn()
		if err != nil {
			return true
		}
		gone := false
		raw.Read(func(fd uintptr) bool {
			k, err := syscall.Read(int(fd), buf)
			gone = k == 0 && err == nil || err != nil && err != syscall.EAGAIN
			return true // never wait
		})
		return gone
	}
	open()
	fmt.Println("flooding", name, n)
	for end := time.Now().Add(dur); time.Now().Before(end); {
		time.Sleep(200 * time.Millisecond)
		for i, c := range conns {
			if c != nil && closedByPeer(c) {
				c.Close()
				conns[i] = nil
				closed++
			}
		}
		open()
	}
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	fmt.Printf("done opened=%d closed=%d failed=%d\n", opened, closed, failed)
	return nil
}
