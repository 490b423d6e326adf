package shm

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Regions: memory a process's peers on the host can map.
//
// A payload in a process's ordinary memory reaches a peer with
// process_vm_readv (ReadProcess), which pins the pages and copies in the
// kernel: several times the cost of a user-space copy out of a shared
// mapping (docs/measurements.md#regions). A region is memory that is shared from the start: a tmpfs file (created
// without a name as a segment is, so nothing can leak) mapped into its
// owner, whose descriptor a peer may reopen through /proc/PID/fd and map
// too. The owner hands out its bytes (NewRegion, Region.Bytes) as NCCL's
// ncclMemAlloc hands out memory that can be registered; when it sends a
// payload that lies in a region (FindRegion), it tells the peer where in
// which file, and the peer copies the payload out of its own mapping of
// that file (PeerRegions), one plain copy.
//
// A peer identifies the file by its inode, which the owner sends along
// with the descriptor's number: a descriptor number can be reused once a
// region is freed, an inode cannot while the peer still maps the file,
// and the peer checks it after reopening, together with the device: an
// inode number is unique only within one file system, and a reused
// descriptor may name a file on another one. The device is not sent: the
// owner creates its regions in regionDir, and a peer that shares memory
// with it shares that tmpfs (runtime/topo compares its device). A region
// the owner frees stays allocated while a peer maps it, until that peer's
// link closes; a peer keeps at most peerRegionsMax mappings of one owner.

// regionDir is where regions are created: the tmpfs whose size limit the
// administrator set for shared memory, as for segments.
const regionDir = DefaultDir

// Region is shared memory that this process's peers can map.
type Region struct {
	fd    int
	inode uint64
	mem   []byte
}

// RegionRef says where a payload is in its owner's regions: the region
// file's descriptor number in the owner and inode, and the payload's
// offset in it.
type RegionRef struct {
	FD     int
	Inode  uint64
	Offset uint64
}

// regions are this process's live regions, for FindRegion. They are the
// process's, not a link's or a communicator's: the memory MemAlloc hands
// out may go over any link of any communicator.
var regions struct {
	sync.RWMutex
	live []*Region // ordered by address
}

// NewRegion makes a region of size bytes (rounded up to whole pages, only
// size of them shown by Bytes), pre-faulted into this process.
func NewRegion(size int) (*Region, error) {
	if size <= 0 {
		return nil, fmt.Errorf("shm: region of %d bytes", size)
	}
	mapped := roundUp(size, os.Getpagesize())
	if err := CheckSpace(regionDir, uint64(mapped), nil); err != nil {
		return nil, err
	}
	fd, _, err := createAnonymous(regionDir)
	if err != nil {
		return nil, err
	}
	r, err := mapRegion(fd, mapped)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	r.mem = r.mem[:size]
	regions.Lock()
	i, _ := liveIndex(Addr(r.mem))
	regions.live = slices.Insert(regions.live, i, r)
	regions.Unlock()
	return r, nil
}

func mapRegion(fd, size int) (*Region, error) {
	if err := unix.Fallocate(fd, 0, 0, int64(size)); err != nil {
		if errors.Is(err, unix.ENOSPC) {
			free, _ := freeOrZero(regionDir, nil)
			return nil, &SpaceError{Dir: regionDir, Free: free, Need: uint64(size)}
		}
		return nil, fmt.Errorf("shm: fallocate a region of %d bytes: %w", size, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("shm: fstat a region: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("shm: mmap a region of %d bytes: %w", size, err)
	}
	return &Region{fd: fd, inode: st.Ino, mem: mem}, nil
}

// liveIndex finds the live region starting at addr, or where one would
// go; the caller holds regions' lock.
func liveIndex(addr uint64) (int, bool) {
	return slices.BinarySearchFunc(regions.live, addr, func(r *Region, a uint64) int { return cmp.Compare(Addr(r.mem), a) })
}

// Bytes returns the region's memory; nil after Free.
func (r *Region) Bytes() []byte { return r.mem }

// Free unmaps the region and closes its file. Its memory must not be used
// again; peers that map it keep it allocated until their links close.
func (r *Region) Free() error {
	regions.Lock()
	i := slices.Index(regions.live, r)
	if i < 0 {
		regions.Unlock()
		return errors.New("shm: region freed twice")
	}
	regions.live = slices.Delete(regions.live, i, i+1)
	regions.Unlock()
	err := unix.Munmap(r.mem[:cap(r.mem)])
	if cerr := unix.Close(r.fd); err == nil {
		err = cerr
	}
	r.mem = nil
	return err
}

// RegionAt returns the live region whose memory starts at p, or nil.
func RegionAt(p []byte) *Region {
	if len(p) == 0 {
		return nil
	}
	start := Addr(p)
	regions.RLock()
	defer regions.RUnlock()
	i, found := liveIndex(start)
	if !found {
		return nil
	}
	return regions.live[i]
}

// FindRegion reports where p lies in this process's regions, if it lies
// wholly in one. p must not be empty.
func FindRegion(p []byte) (RegionRef, bool) {
	start := Addr(p)
	regions.RLock()
	defer regions.RUnlock()
	// The last region starting at or below p.
	i, found := liveIndex(start)
	if !found {
		i--
	}
	if i < 0 {
		return RegionRef{}, false
	}
	r := regions.live[i]
	off := start - Addr(r.mem)
	if off+uint64(len(p)) > uint64(len(r.mem)) {
		return RegionRef{}, false
	}
	return RegionRef{FD: r.fd, Inode: r.inode, Offset: off}, true
}

// peerRegionsMax bounds how many regions of one peer a PeerRegions maps:
// a program that allocates and frees regions over and over must not keep
// them all alive in its peers.
const peerRegionsMax = 16

// PeerRegions maps the regions of one peer process, each once, for a
// single goroutine (a link's receiver).
type PeerRegions struct {
	pid    int
	maps   []peerRegion // most recently mapped last
	failed error        // the first mapping that failed: none is tried again
}

type peerRegion struct {
	inode uint64
	mem   []byte
}

// NewPeerRegions returns an empty set of mappings of process pid's
// regions.
func NewPeerRegions(pid int) *PeerRegions { return &PeerRegions{pid: pid} }

// Payload returns the n bytes ref names in the peer's regions, mapping the
// region first if it is not yet mapped here.
func (m *PeerRegions) Payload(ref RegionRef, n int) ([]byte, error) {
	var mem []byte
	for _, pr := range m.maps {
		if pr.inode == ref.Inode {
			mem = pr.mem
			break
		}
	}
	if mem == nil {
		// A peer whose region could not be mapped once (another mount
		// namespace, say) will not do better later: the caller reads
		// with process_vm_readv instead, without an open per payload.
		if m.failed != nil {
			return nil, m.failed
		}
		var err error
		if mem, err = m.mapPeer(ref); err != nil {
			m.failed = err
			return nil, err
		}
	}
	if ref.Offset > uint64(len(mem)) || uint64(n) > uint64(len(mem))-ref.Offset {
		return nil, fmt.Errorf("shm: %d bytes at %d of a region of %d bytes of process %d", n, ref.Offset, len(mem), m.pid)
	}
	return mem[ref.Offset : ref.Offset+uint64(n) : ref.Offset+uint64(n)], nil
}

// mapPeer maps the region ref names, read-only, after checking that the
// descriptor still is that region's file.
func (m *PeerRegions) mapPeer(ref RegionRef) ([]byte, error) {
	path := fmt.Sprintf("/proc/%d/fd/%d", m.pid, ref.FD)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: open process %d's region: %w", m.pid, err)
	}
	defer unix.Close(fd)
	var st, dir unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("shm: fstat process %d's region: %w", m.pid, err)
	}
	if err := unix.Stat(regionDir, &dir); err != nil {
		return nil, fmt.Errorf("shm: stat %s for process %d's region: %w", regionDir, m.pid, err)
	}
	if st.Dev != dir.Dev || st.Ino != ref.Inode || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size <= 0 {
		return nil, fmt.Errorf("shm: %s is not the region it was said to be (device %d:%d inode %d, want %d:%d inode %d)",
			path, unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino, unix.Major(dir.Dev), unix.Minor(dir.Dev), ref.Inode)
	}
	mem, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("shm: mmap process %d's region of %d bytes: %w", m.pid, st.Size, err)
	}
	if len(m.maps) == peerRegionsMax {
		_ = unix.Munmap(m.maps[0].mem)
		m.maps = slices.Delete(m.maps, 0, 1)
	}
	m.maps = append(m.maps, peerRegion{inode: ref.Inode, mem: mem})
	return mem, nil
}

// Mapped returns how many of the peer's regions are mapped here.
func (m *PeerRegions) Mapped() int { return len(m.maps) }

// Close unmaps every region mapped here. The receiver must be done with
// the payloads it was shown.
func (m *PeerRegions) Close() {
	for _, pr := range m.maps {
		_ = unix.Munmap(pr.mem)
	}
	m.maps = nil
}
