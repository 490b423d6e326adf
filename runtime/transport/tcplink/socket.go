package tcplink

import (
	"log/slog"
	"net"

	"github.com/hcclrun/hcclrun/netio"
)

// The data links' socket options (Config.Socket): both ends of a link set
// them on their socket, as each end's congestion control governs what it
// sends.

// tune applies the links' socket options to conn; a failure costs speed,
// not the link, so it is logged.
func (t *Transport) tune(conn net.Conn, peer int) {
	if t.cfg.Socket == (netio.SocketOptions{}) {
		return
	}
	if err := netio.Tune(conn, t.cfg.Socket); err != nil {
		t.log.Warn("data link keeps the kernel's socket options", "peer", peer, "err", err)
	}
}

// CheckCongestion returns the congestion control the data links should
// use, "" for the kernel's default, when name is asked for: it tries name
// on a socket of its own first (netio.CheckCongestion), so that a kernel
// that refuses it (not built, or not allowed to this user) fails the
// rank when required (the user chose it), and is passed over with a
// warning when not (a default).
func CheckCongestion(name string, required bool, log *slog.Logger) (string, error) {
	if name == "" {
		return "", nil
	}
	err := netio.CheckCongestion(name)
	switch {
	case err == nil:
		log.Info("TCP data links", "congestion_control", name)
		return name, nil
	case required:
		return "", err
	}
	log.Warn("the data links keep the kernel's TCP congestion control", "wanted", name, "err", err)
	return "", nil
}
