package runtime

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/hcclrun/hcclrun/netio"
)

// The data links' TCP congestion control (HCCL_SOCKET_CONGESTION, see
// tunables.SocketCongestion): both ends of a link set it on their socket, as
// each end's governs what it sends.

// congestionFor returns the congestion control the data links use, ""
// for the kernel's default. It tries the knob's on a socket of its own
// first, so that a kernel that refuses it (not built, or not allowed to
// this user) fails Init with the variable's name when the user chose it,
// and is passed over with a warning when it is the default.
func congestionFor(k tunables, log *slog.Logger) (string, error) {
	name := k.SocketCongestion
	if name == "" {
		return "", nil
	}
	err := netio.CheckCongestion(name)
	switch {
	case err == nil:
		log.Info("TCP data links", "congestion_control", name)
		return name, nil
	case k.SocketCongestionSet:
		return "", fmt.Errorf("HCCL_SOCKET_CONGESTION=%s: the kernel refuses it: %w", name, err)
	}
	log.Warn("the data links keep the kernel's TCP congestion control", "wanted", name, "err", err)
	return "", nil
}

// tuneData applies the data links' socket options to conn; a failure
// costs speed, not the link, so it is logged.
func (m *linkManager) tuneData(conn net.Conn, peer int) {
	if m.dataOpts == (netio.SocketOptions{}) {
		return
	}
	if err := netio.Tune(conn, m.dataOpts); err != nil {
		m.log.Warn("data link keeps the kernel's socket options", "peer", peer, "err", err)
	}
}
