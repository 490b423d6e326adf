package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ttyHelperEnv makes the test binary act as an interactive shell would for
// `hcclrun ... &`: the leader of a session whose controlling terminal is its
// stdin (a pty), it starts hcclrun in a process group of its own, which is
// then in the background of that terminal.
const ttyHelperEnv = "HCCLRUN_TEST_TTY_HELPER"

func init() {
	if os.Getenv(ttyHelperEnv) != "1" {
		return
	}
	args := strings.Split(os.Getenv("HCCLRUN_TEST_TTY_ARGS"), "\x1f")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "tty helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// openPty returns the master and slave of a new pseudo-terminal.
func openPty(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestBackgroundTerminalStdin: hcclrun in the background of its terminal
// must not read it (SIGTTIN would stop the whole job); rank 0 gets EOF.
func TestBackgroundTerminalStdin(t *testing.T) {
	master, slave := openPty(t)
	defer master.Close()
	dir := t.TempDir()
	args := append([]string{hcclrunBin}, rankArgs(dir, []string{"-np", "2"}, "cat", "echo", "done")...)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(self)
	helper.Env = append(os.Environ(), ttyHelperEnv+"=1", "HCCLRUN_TEST_TTY_ARGS="+strings.Join(args, "\x1f"))
	var out bytes.Buffer
	helper.Stdin, helper.Stdout, helper.Stderr = slave, &out, &out
	helper.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	start := time.Now()
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	res := wait(t, helper, nil, nil, start, 20*time.Second)
	noLeftovers(t, dir)
	if res.code != 0 || strings.Count(out.String(), "done\n") != 2 {
		t.Fatalf("exit code %d, output %q", res.code, out.String())
	}
}
