// Package topo finds out where a rank runs and which of its peers it can
// share memory with.
//
// Each rank gathers Facts about itself (Gather): an identity of its host
// that decides shared-memory reachability, its network interfaces
// (netlink, with speeds from sysfs), its CPU affinity and the NUMA layout.
// The facts travel over the control plane as JSON; Build turns the facts of
// every rank into a Topology: the servers, the ranks of each, and a link
// class for every pair of ranks.
//
// A host name says little here: network namespaces or containers on one
// kernel may or may not share /dev/shm, and two machines may share a name.
// Two ranks are on one server when they run on the same kernel (boot id)
// in the same network namespace (our shared-memory set-up goes through an
// abstract unix socket, which is per network namespace), the same IPC
// namespace and the same /dev/shm mount.
package topo
