package shmlink

import (
	"log/slog"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/shm"
)

// TestHostWait: ranks with a CPU each spin; they yield when they outnumber
// the CPUs, and sleep at once, for up to the crowd's period, beyond
// YieldCrowd ranks per CPU. Only ranks with a CPU each offer shares.
func TestHostWait(t *testing.T) {
	spinning := shm.WaitPolicy{Spin: 200 * time.Microsecond, WakePeriod: shm.WakePeriod}
	yielding := shm.WaitPolicy{Yield: 100 * time.Microsecond, WakePeriod: shm.WakePeriod}
	asleep := shm.WaitPolicy{WakePeriod: shm.CrowdWakePeriod}
	for _, tt := range []struct {
		host   Host
		want   shm.WaitPolicy
		shares bool
	}{
		{Host{Ranks: 1, CPUs: 1}, spinning, true},
		{Host{Ranks: 2, CPUs: 2}, spinning, true},
		{Host{Ranks: 2, CPUs: 4}, spinning, true},
		{Host{Ranks: 4, CPUs: 2}, yielding, false},
		{Host{Ranks: 2 * YieldCrowd, CPUs: 2}, yielding, false},
		{Host{Ranks: 2*YieldCrowd + 1, CPUs: 2}, asleep, false},
		{Host{Ranks: 256, CPUs: 2}, asleep, false},
	} {
		if got := tt.host.Wait(); got != tt.want {
			t.Errorf("%+v: wait %+v, want %+v", tt.host, got, tt.want)
		}
		if got := tt.host.Shares(); got != tt.shares {
			t.Errorf("%+v: shares %v, want %v", tt.host, got, tt.shares)
		}
		if got, want := tt.host.Crowded(), tt.want == asleep; got != want {
			t.Errorf("%+v: crowded %v, want %v", tt.host, got, want)
		}
	}
}

// TestHostLazyRings: a host's rings fault in at first touch where they
// were shrunk or the ranks outnumber the CPUs more than twice over.
func TestHostLazyRings(t *testing.T) {
	for _, tt := range []struct {
		host           Host
		ring, buffSize int
		want           bool
	}{
		{Host{Ranks: 4, CPUs: 2}, DefaultRingBytes, 0, false},
		{Host{Ranks: 5, CPUs: 2}, DefaultRingBytes, 0, true},
		{Host{Ranks: 2, CPUs: 2}, 1 << 20, 0, true},
		{Host{Ranks: 2, CPUs: 2}, 1 << 20, 1 << 20, false},
	} {
		if got := tt.host.LazyRings(tt.ring, tt.buffSize); got != tt.want {
			t.Errorf("%+v, ring %d, HCCL_BUFFSIZE %d: lazy %v, want %v", tt.host, tt.ring, tt.buffSize, got, tt.want)
		}
	}
}

// TestWithoutPipes: the choice decides when made, and nothing is probed
// where nothing is read in place or the host is crowded.
func TestWithoutPipes(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, tt := range []struct {
		choice                PipeChoice
		readsInPlace, crowded bool
		want                  bool
	}{
		{PipesOff, true, false, true},
		{PipesOn, true, false, false},
		{PipesOn, true, true, false},
		{PipesProbed, false, false, true},
		{PipesProbed, true, true, true},
	} {
		if got := WithoutPipes(tt.choice, tt.readsInPlace, tt.crowded, log); got != tt.want {
			t.Errorf("%+v: without pipes %v, want %v", tt, got, tt.want)
		}
	}
}
