// Package testhosts lets tests find the simulated hosts of the project's multi-host
// harness, hosts.sh in this directory, and inject faults into them.
//
// The harness runs N "hosts" h1..hN on this machine, each a set of Linux namespaces
// (network, mount, UTS, IPC, PID) with its own real OpenSSH sshd, its own /dev/shm and
// hostname. Tests call [Require], which skips the test with a message saying how to
// bring the harness up when it is not up or the test is not running as root (the
// faults need root), and fails instead of skipping when HCCL_TEST_REQUIRE_HOSTS=1, so
// that CI cannot pass by skipping:
//
//	sudo internal/testhosts/hosts.sh up 3
//	eval "$(internal/testhosts/hosts.sh env)"   # optional: Require also reads the harness state file
//	go test ./launcher/...
//	sudo internal/testhosts/hosts.sh down
//
// Faults ([Env.Crash], [Env.Cut]) register a cleanup that restores the host, so a test
// leaves the harness as it found it. Require also takes a machine-wide lock on the
// harness for the test's duration: `go test ./...` runs packages' test binaries at
// once, and one package crashing h2 must not fail another's test on h2.
package testhosts
