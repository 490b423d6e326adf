package launcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hcclrun/hcclrun/launcher/placement"
	"github.com/hcclrun/hcclrun/launcher/ssh"
)

// Remote says how a job placed on several hosts reaches them.
type Remote struct {
	// SSH configures the connections (keys, user, port, config, known_hosts).
	SSH ssh.Options
	// AgentPath is the hcclrun that the remote hosts run as `AgentPath
	// agent`: the launcher's own absolute path when it was invoked by one
	// (like Open MPI), PREFIX/bin/hcclrun with --prefix, else "hcclrun"
	// from the remote PATH. "" means "hcclrun".
	AgentPath string
	// Slurm, when not nil, starts the agents with one srun step instead
	// of SSH (slurm.go); SSH is then unused.
	Slurm *Slurm
}

// connectHosts turns a placement into the job's hosts: a LocalSpawner for a
// node that is this machine, an agent over SSH for every other. Every
// remote host is dialled (in parallel, with the ssh package's cap) and its
// agent started before any rank, so that a refused host key, user or key
// fails the job with nothing started anywhere. It also returns where the
// control plane must listen: on the address this machine uses towards the
// first remote host (never on every interface), or "" for the default
// loopback when all nodes are local.
func connectHosts(ctx context.Context, p *placement.Placement, rm Remote, log *slog.Logger) ([]Host, string, error) {
	hosts := make([]Host, len(p.Nodes))
	var remote []int
	var local []string
	for i, n := range p.Nodes {
		hosts[i].Ranks = n.Ranks
		if isLocalHost(n.Host.Name) {
			local = append(local, n.Host.Name)
			continue
		}
		remote = append(remote, i)
	}
	if len(local) > 1 {
		// Two servers of the table would be one machine: its ranks could
		// not tell their peers apart by host.
		all := "both"
		if len(local) > 2 {
			all = "all"
		}
		names := strings.Join(local[:len(local)-1], ", ") + " and " + local[len(local)-1]
		return nil, "", Usagef("hosts %s are %s this machine: list it once, with the sum of their slots", names, all)
	}
	if len(remote) == 0 {
		for i, n := range p.Nodes {
			hosts[i].Addr = localHostAddr
			hosts[i].Spawner = NewLocalSpawner(localName(n.Host.Name))
		}
		return hosts, "", nil
	}
	opts := rm.SSH
	if opts.Logger == nil {
		opts.Logger = log
	}
	d, err := ssh.NewDialer(opts)
	if err != nil {
		return nil, "", err
	}
	defer d.Close()
	dest := make([]string, len(remote))
	for k, i := range remote {
		h := p.Nodes[i].Host
		dest[k] = h.Name
		if h.User != "" {
			dest[k] = h.User + "@" + h.Name
		}
	}
	start := time.Now()
	clients, err := d.DialAll(ctx, dest)
	log.Debug("ssh connections", "hosts", len(dest), "took", time.Since(start), "err", err)
	if err != nil {
		closeClients(clients)
		return nil, "", fmt.Errorf("connect to the job's hosts (nothing was started): %w", err)
	}
	for k, i := range remote {
		addr, err := hostIP(clients[k].Target().HostName)
		if err != nil {
			closeClients(clients)
			return nil, "", fmt.Errorf("host %s: %w", p.Nodes[i].Host.Name, err)
		}
		hosts[i].Addr = addr
	}
	controlIP, err := routeSource(hosts[remote[0]].Addr)
	if err != nil {
		closeClients(clients)
		return nil, "", err
	}
	agentPath := rm.AgentPath
	if agentPath == "" {
		agentPath = "hcclrun"
	}
	errs := make([]error, len(remote))
	var wg sync.WaitGroup
	for k, i := range remote {
		wg.Go(func() {
			hosts[i].Spawner, errs[k] = startSSHAgent(ctx, clients[k], p.Nodes[i].Host.Name, agentPath, log)
		})
	}
	wg.Wait()
	log.Debug("agents started", "hosts", len(remote), "took", time.Since(start))
	if err := errors.Join(errs...); err != nil {
		for k, i := range remote {
			if hosts[i].Spawner != nil {
				hosts[i].Spawner.Close()
			} else {
				clients[k].Close()
			}
		}
		return nil, "", fmt.Errorf("%w (no rank was started)", err)
	}
	for i, n := range p.Nodes {
		if hosts[i].Spawner == nil {
			hosts[i].Addr = controlIP
			hosts[i].Spawner = NewLocalSpawner(localName(n.Host.Name))
		}
	}
	return hosts, net.JoinHostPort(controlIP, "0"), nil
}

// startSSHAgent runs `agentPath agent` on the client's host and drives it.
// The session has no pty: the agent's link is its stdin and stdout, and it
// does its own cleanup when they end.
func startSSHAgent(ctx context.Context, c *ssh.Client, name, agentPath string, log *slog.Logger) (Spawner, error) {
	sess, err := c.Start(ctx, ssh.Command{Args: []string{agentPath, "agent"}})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("start agent on %s: %w", name, err)
	}
	sp, err := NewAgentSpawner(ctx, name, AgentLink{
		R: sess.Stdout, W: sess.Stdin, Stderr: sess.Stderr,
		Close: func() error { sess.Close(); return c.Close() },
		Lost:  c.Done(), Err: c.Err,
	}, log)
	if err != nil && (strings.Contains(err.Error(), "No such file") || strings.Contains(err.Error(), "not found")) {
		err = fmt.Errorf("%w; hcclrun must be installed as %s on every host (run hcclrun by that absolute path, or give --prefix DIR for DIR/bin/hcclrun)", err, agentPath)
	}
	return sp, err
}

func closeClients(cs []*ssh.Client) {
	for _, c := range cs {
		if c != nil {
			c.Close()
		}
	}
}

// hostIP is the IP address a host name stands for (the first IPv4 one, as
// the rank table wants one address per server).
func hostIP(name string) (string, error) {
	if ip := net.ParseIP(name); ip != nil {
		return ip.String(), nil
	}
	ips, err := net.LookupIP(name)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", name, err)
	}
	for _, ip := range ips {
		if ip.To4() != nil {
			return ip.String(), nil
		}
	}
	return ips[0].String(), nil
}

// routeSource is the local address the kernel would send from towards ip:
// the address the hosts reach this machine on. Connecting a UDP socket
// sends nothing.
func routeSource(ip string) (string, error) {
	c, err := net.Dial("udp", net.JoinHostPort(ip, "9"))
	if err != nil {
		return "", fmt.Errorf("find this machine's address towards %s: %w", ip, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
}

// isLocalHost reports whether a placement host is this machine: localhost,
// a loopback address, the hostname (or its first label), or an address of
// one of this machine's interfaces. Such a host runs its ranks directly.
func isLocalHost(name string) bool {
	if name == placement.LocalhostName || name == "localhost.localdomain" {
		return true
	}
	if ip := net.ParseIP(name); ip != nil {
		if ip.IsLoopback() {
			return true
		}
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
		return false
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return false
	}
	short, _, _ := strings.Cut(h, ".")
	return strings.EqualFold(name, h) || strings.EqualFold(name, short)
}

// localName is how a local node is named in summaries: the machine's
// hostname for "localhost", the name the user gave otherwise.
func localName(name string) string {
	if name == placement.LocalhostName {
		return ""
	}
	return name
}
