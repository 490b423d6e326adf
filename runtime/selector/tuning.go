package selector

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ParseTuning reads a tuning file and returns base with its settings
// applied. One setting per line, "#" starts a comment:
//
//	shm.alpha 5us            # latency per message of a class (shm, net)
//	shm.bandwidth 1.25e9     # bytes per second of a class
//	net.parallel 2           # channels a class carries at full speed each
//	shm.head.bandwidth 12e9  # the first 16 KiB of a round's shm transfer, beyond the bandwidth
//	reduce.bandwidth 1e9     # bytes of one input reduced per second
//	copy.bandwidth 2.5e9     # bytes copied locally per second
//	step 500ns               # cost of a local step and of posting a message
//	handoff 20us             # each receive of a step beyond the first
//	poll.max 128K            # the largest transfer that pays no handoff
//	cores 2                  # cores a server's ranks share
//	cache.bytes 1M           # a server's working set still served from cache
//	memory.bytes 32M         # the working set from which every byte is from memory
//	memory.slowdown 4        # how much slower byte work is from memory
//	wake 30us                # a round over shm when ranks outnumber cores
//	exchange.slowdown 1.1    # an exchange round's bytes, likewise
//	crowd 2us                # a round and a message per rank at work per core beyond crowd.from
//	crowd.from 2             #   from this many ranks at work per core on
//	net.wake 20us            # a message received over net, likewise
//	net.wake.others 0.5      # its share for each receive of a step beyond the first
//	net.fanout.slowdown 2    # net bytes of a step sending big transfers to several peers,
//	net.fanout.bytes 128K    #   likewise, from transfers of this size
//	slow.handoff 1.5us       # a measured hand-off from which a host is slow (SlowHost)
//	slow.wake 7us            #   its wake,
//	slow.poll.max 32K        #   poll.max
//	slow.net.alpha 13us      #   and net.alpha
//	post.min 256K            # the smallest transfer posted in place (Model.Posted)
//	channels.max 2
//	channels.minbytes 8M     # each channel gets at least this much of the call
//	channels.maxbytes 32M    # larger calls run on one channel (0: no bound)
//	segment.min 256K
//	segment.max 1M
//
// A job prices a slow host (Model.WithHandoff) before it reads its tuning
// file, so the file's wake, poll.max and net.alpha win over the slow.*
// ones; those set DefaultModel's (default.tuning). Errors name the line.
func ParseTuning(r io.Reader, base Model) (Model, error) {
	m := base
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return base, fmt.Errorf("tuning line %d: want \"key value\", got %q", line, strings.TrimSpace(text))
		}
		if err := m.set(strings.ToLower(f[0]), f[1]); err != nil {
			return base, fmt.Errorf("tuning line %d: %s: %w", line, f[0], err)
		}
	}
	if err := sc.Err(); err != nil {
		return base, fmt.Errorf("tuning: %w", err)
	}
	return m, nil
}

func (m *Model) set(key, val string) error {
	dur := func(d *time.Duration) error {
		v, err := time.ParseDuration(val)
		if err != nil || v < 0 {
			return fmt.Errorf("bad duration %q", val)
		}
		*d = v
		return nil
	}
	rate := func(inv *float64) error {
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || !(v > 0) || v > 1e18 {
			return fmt.Errorf("bad bandwidth %q (bytes per second)", val)
		}
		*inv = 1 / v
		return nil
	}
	count := func(p *int) error {
		v, err := strconv.Atoi(val)
		if err != nil || v < 1 || v > 64 {
			return fmt.Errorf("bad count %q (1 to 64)", val)
		}
		*p = v
		return nil
	}
	size := func(p *int64) error {
		v, err := ParseBytes(val)
		if err != nil {
			return err
		}
		*p = v
		return nil
	}
	slowdown := func(p *float64) error {
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || v < 1 || v > 1000 {
			return fmt.Errorf("bad slowdown %q (1 to 1000)", val)
		}
		*p = v
		return nil
	}
	share := func(p *float64) error {
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || v < 0 || v > 1 {
			return fmt.Errorf("bad share %q (0 to 1)", val)
		}
		*p = v
		return nil
	}
	// A link class's own constants; the model's other settings named
	// after a class (shm.head.bandwidth, net.wake, ...) are below.
	if cls, field, ok := strings.Cut(key, "."); ok && (cls == "shm" || cls == "net") {
		l := &m.Links[Shm]
		if cls == "net" {
			l = &m.Links[Net]
		}
		switch field {
		case "alpha":
			return dur(&l.Alpha)
		case "bandwidth":
			return rate(&l.Beta)
		case "parallel":
			return count(&l.Parallel)
		}
	}
	var err error
	switch key {
	case "shm.head.bandwidth":
		return rate(&m.Head)
	case "net.wake":
		return dur(&m.NetWake)
	case "net.wake.others":
		return share(&m.NetWakeOthers)
	case "net.fanout.slowdown":
		return slowdown(&m.FanOut)
	case "net.fanout.bytes":
		return size(&m.FanOutMin)
	case "slow.handoff":
		return dur(&m.Slow.Handoff)
	case "slow.wake":
		return dur(&m.Slow.Wake)
	case "slow.poll.max":
		return size(&m.Slow.PollMax)
	case "slow.net.alpha":
		return dur(&m.Slow.NetAlpha)
	case "post.min":
		return size(&m.PostMin)
	case "reduce.bandwidth":
		return rate(&m.Gamma)
	case "copy.bandwidth":
		return rate(&m.Copy)
	case "step":
		return dur(&m.Step)
	case "handoff":
		return dur(&m.Handoff)
	case "poll.max":
		return size(&m.PollMax)
	case "wake":
		return dur(&m.Wake)
	case "cache.bytes":
		return size(&m.CacheBytes)
	case "memory.bytes":
		return size(&m.MemBytes)
	case "memory.slowdown":
		return slowdown(&m.MemSlowdown)
	case "exchange.slowdown":
		return slowdown(&m.Exchange)
	case "crowd":
		return dur(&m.Crowd)
	case "crowd.from":
		return slowdown(&m.CrowdFrom)
	case "cores":
		v, err := strconv.Atoi(val)
		if err != nil || v < 0 || v > 1<<20 {
			return fmt.Errorf("bad core count %q (0 for as many as ranks)", val)
		}
		m.Cores = v
		return nil
	case "channels.max":
		return count(&m.MaxChannels)
	case "channels.minbytes":
		return size(&m.MinChannelBytes)
	case "channels.maxbytes":
		return size(&m.MaxChannelCall)
	case "segment.min":
		err = size(&m.MinSegment)
	case "segment.max":
		err = size(&m.MaxSegment)
	default:
		return fmt.Errorf("unknown setting")
	}
	if err == nil && (m.MinSegment < 1 || m.MinSegment > m.MaxSegment) {
		err = fmt.Errorf("segment.min %d above segment.max %d or below 1", m.MinSegment, m.MaxSegment)
	}
	return err
}
