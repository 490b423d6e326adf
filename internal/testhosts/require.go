package testhosts

import (
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// Require returns the running harness with at least n hosts, each answering on its ssh
// port. When the process is not root, or the harness is not up, it skips the test with
// a message that says how to bring it up; with HCCL_TEST_REQUIRE_HOSTS=1 it fails the
// test instead, so CI notices a harness that did not start. The test holds the
// harness (see lock.go) until it ends, so tests of different packages do not crash
// hosts under each other.
func Require(t testing.TB, n int) *Env {
	t.Helper()
	e, why := lookupReady(t, n)
	if why == "" {
		return e
	}
	msg := fmt.Sprintf("testhosts: %s; to run this test: sudo internal/testhosts/hosts.sh up %d && eval \"$(internal/testhosts/hosts.sh env)\"", why, max(n, 3))
	if requireHosts() {
		t.Fatal(msg + " (HCCL_TEST_REQUIRE_HOSTS=1: not skipping)")
	}
	t.Skip(msg)
	return nil
}

// lookupReady finds the harness, takes its lock, then checks the hosts answer (in that
// order: while another test binary holds the lock, one of its hosts may be crashed).
func lookupReady(t testing.TB, n int) (*Env, string) {
	if uid := os.Geteuid(); uid != 0 {
		return nil, fmt.Sprintf("needs root (euid %d): the harness uses network namespaces", uid)
	}
	e, err := Lookup()
	if err != nil {
		return nil, err.Error()
	}
	if len(e.Hosts) < n {
		return nil, fmt.Sprintf("harness has %d hosts, test needs %d", len(e.Hosts), n)
	}
	if err := lock(t, e.State); err != nil {
		return nil, err.Error()
	}
	// One TCP connect per host: a harness whose state file survived a reboot, or a host
	// that an earlier test left crashed, is not "up".
	errs := make([]error, len(e.Hosts))
	var wg sync.WaitGroup
	for i, h := range e.Hosts {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(h, "22"), 2*time.Second)
			if err == nil {
				c.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Sprintf("host %s (%s) does not answer on port 22: %v", e.Names[i], e.Hosts[i], err)
		}
	}
	return e, ""
}

// Name returns the harness name (h1, ...) of the host with address ip, or ip itself.
func (e *Env) Name(ip string) string {
	for i, h := range e.Hosts {
		if h == ip {
			return e.Names[i]
		}
	}
	return ip
}
