// Package multihost holds the end-to-end tests of multi-host jobs: a built
// hcclrun launching built programs over SSH on the simulated hosts of
// internal/testhosts/hosts.sh (network namespaces, one real sshd each, private
// /dev/shm and PID space each), with real crashes and real network cuts.
// The tests need root and the harness up; elsewhere they skip and say how
// to bring it up (see package testhosts).
//
// The hosts share this machine's filesystem, /tmp included, so the
// binaries are built once into a temporary directory and run by absolute
// path everywhere: the agent hcclrun starts on each host is the launcher's
// own binary.
package multihost
