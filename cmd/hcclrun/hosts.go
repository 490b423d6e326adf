package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hcclrun/hcclrun/launcher"
	"github.com/hcclrun/hcclrun/launcher/placement"
	"github.com/hcclrun/hcclrun/launcher/ssh"
)

// hostFlags are the launch flags that place ranks on hosts and reach them
// over SSH, named as mpirun names them.
func hostFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "hostfile", Aliases: []string{"machinefile"}, Usage: "run on the hosts of `FILE` (Open MPI \"host slots=N\" or MPICH \"host:N\" lines; Slurm hostlists such as node[01-04] allowed)"},
		&cli.StringSliceFlag{Name: "host", Aliases: []string{"H"}, Usage: "run on `HOSTS`, e.g. h1:2,h2:2 or node[1-3]:4; with --hostfile, selects among its hosts"},
		&cli.StringFlag{Name: "map-by", Value: "slot", Usage: "place ranks by `slot` (fill each host in turn) or node (round robin); ranks stay contiguous per host"},
		&cli.IntFlag{Name: "npernode", Aliases: []string{"N"}, Usage: "run `K` ranks on each host"},
		&cli.BoolFlag{Name: "oversubscribe", Usage: "allow more ranks on a host than it has slots"},
		&cli.BoolFlag{Name: "display-map", Usage: "print where the ranks would run and exit"},
		&cli.StringFlag{Name: "ssh-identity", Usage: "private key `FILE` for ssh (default ~/.ssh/id_ed25519, id_ecdsa, id_rsa, and ssh-agent)"},
		&cli.StringFlag{Name: "ssh-user", Usage: "login `USER` on the hosts (user@host in a hostfile wins)"},
		&cli.IntFlag{Name: "ssh-port", Usage: "ssh `PORT` of the hosts (default from the ssh config, else 22)"},
		&cli.StringFlag{Name: "ssh-config", Usage: "ssh client config `FILE` (default ~/.ssh/config)"},
		&cli.StringFlag{Name: "ssh-known-hosts", Usage: "known_hosts `FILE` (default ~/.ssh/known_hosts)"},
		&cli.BoolFlag{Name: "ssh-accept-new", Usage: "add unknown host keys to known_hosts, like StrictHostKeyChecking=accept-new (changed keys are still refused)"},
		&cli.StringFlag{Name: "prefix", Usage: "run `DIR`/bin/hcclrun as the agent on remote hosts"},
		&cli.StringFlag{Name: "launcher", Usage: "reach the hosts with `HOW`: slurm (one srun step), ssh, or local (this machine only)", DefaultText: "slurm inside a Slurm allocation, ssh with --hostfile or -H, else local"},
	}
}

// errMapShown ends a --display-map run: the map was printed, nothing is
// launched, and run exits 0.
var errMapShown = errors.New("job map displayed")

// placeJob sets the job's placement from the host flags. Without
// --hostfile and -H, inside a Slurm allocation the allocation's nodes are
// the hosts (as mpirun does); otherwise the job stays on this machine as
// before (Hosts and Placement nil, -N giving -np when -np is not set). With
// --display-map it prints the map and returns errMapShown.
func placeJob(c *cli.Context, io stdio, job *launcher.Job) error {
	hostfile := c.String("hostfile")
	hostList := strings.Join(c.StringSlice("host"), ",")
	mapBy, err := placement.ParseMapBy(c.String("map-by"))
	if err != nil {
		return launcher.Usagef("%v", err)
	}
	if c.Int("npernode") < 0 {
		return launcher.Usagef("-N must be at least 1, got %d", c.Int("npernode"))
	}
	opts := placement.Options{MapBy: mapBy, PerNode: c.Int("npernode"), Oversubscribe: c.Bool("oversubscribe")}
	how, err := launcherKind(c.String("launcher"), hostfile != "" || hostList != "")
	if err != nil {
		return err
	}
	if c.IsSet("np") {
		opts.NP = job.NP
	}
	var hosts []placement.Host
	inAlloc := false
	if nodes, tasks := slurmAllocation(); how != "local" && hostfile == "" && hostList == "" && nodes != "" && tasks != "" {
		if hosts, err = placement.FromSlurm(nodes, tasks); err != nil {
			return launcher.Usagef("slurm allocation: %v", err)
		}
		if _, ntasks := slurmJob(); !c.IsSet("np") && ntasks > 0 {
			opts.NP = ntasks
		}
		inAlloc = true
	}
	if hostfile == "" && hostList == "" && hosts == nil {
		if opts.PerNode > 0 && !c.IsSet("np") {
			job.NP = opts.PerNode
		}
		if c.Bool("display-map") {
			// A local job may oversubscribe without asking, as before.
			p, err := placement.Map(placement.Localhost(), placement.Options{NP: job.NP, Oversubscribe: true})
			if err != nil {
				return launcher.Usagef("%v", err)
			}
			return showMap(io, p)
		}
		return nil
	}
	if hosts == nil {
		if hosts, err = placement.Resolve(hostfile, hostList); err != nil {
			return launcher.Usagef("%v", err)
		}
	}
	p, err := placement.Map(hosts, opts)
	if err != nil {
		if _, tasks := slurmAllocation(); inAlloc {
			// Slots are the allocation's tasks, as with Open MPI.
			return launcher.Usagef("%v; the Slurm allocation has SLURM_TASKS_PER_NODE=%s: ask salloc or sbatch for the tasks (-n, --ntasks-per-node)", err, tasks)
		}
		return launcher.Usagef("%v", err)
	}
	if c.Bool("display-map") {
		return showMap(io, p)
	}
	job.NP = 0
	job.Placement = p
	job.Remote = launcher.Remote{
		SSH: ssh.Options{
			Identity:       c.String("ssh-identity"),
			User:           c.String("ssh-user"),
			Port:           c.Int("ssh-port"),
			ConfigFile:     c.String("ssh-config"),
			KnownHostsFile: c.String("ssh-known-hosts"),
			AcceptNew:      c.Bool("ssh-accept-new"),
			Logger:         job.Logger,
		},
		AgentPath: agentPath(c.String("prefix"), os.Args[0]),
	}
	if how == "slurm" {
		job.Remote.Slurm = &launcher.Slurm{}
	}
	return nil
}

// launcherKind is --launcher, or its default: slurm inside an allocation,
// ssh with a hostfile or -H, local otherwise. slurm needs an allocation to
// launch in.
func launcherKind(flag string, hostsGiven bool) (string, error) {
	inside, _ := slurmJob()
	switch flag {
	case "":
		switch {
		case hostsGiven:
			return "ssh", nil
		case inside:
			return "slurm", nil
		}
		return "local", nil
	case "slurm":
		if !inside {
			return "", launcher.Usagef("--launcher slurm: not inside a Slurm allocation (SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE unset); run under salloc or sbatch")
		}
		return flag, nil
	case "ssh", "local":
		return flag, nil
	}
	return "", launcher.Usagef("--launcher %q: want slurm, ssh or local", flag)
}

func showMap(io stdio, p *placement.Placement) error {
	if err := p.DisplayMap(io.out); err != nil {
		return err
	}
	return errMapShown
}

// agentPath is the hcclrun the remote hosts run: PREFIX/bin/hcclrun with
// --prefix; the launcher's own path when it was invoked by an absolute path
// (as Open MPI does for orted); else "hcclrun" from the remote PATH.
func agentPath(prefix, argv0 string) string {
	switch {
	case prefix != "":
		return filepath.Join(prefix, "bin", "hcclrun")
	case filepath.IsAbs(argv0):
		return argv0
	}
	return "hcclrun"
}
