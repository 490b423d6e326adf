package wire

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// The handshake, four fixed-size messages (no length field anywhere, so a
// peer cannot make us allocate or wait for more than 46 bytes):
//
//	client -> server  hello:  "HCHS" version Hello(c) nonce(c)        46 bytes
//	server -> client  hello:  "HCHS" version Hello(s) nonce(s)        46 bytes
//	client -> server  proof:  HMAC(key, "client" | T)                 32 bytes
//	server -> client  answer: status, HMAC(key, "server" | T)         33 bytes
//
// where T = label | nonce(c) | nonce(s) | Hello(c) | Hello(s). The nonces
// are fresh on both sides, so a recorded proof is worthless in a new
// session (replay); the role word differs, so a side cannot send the
// other's MAC back to it (reflection); the Hellos are inside T, so the
// identities the two sides learn are the ones that were proved. The server
// proves itself only after the client has, and tells a rejected client so
// (status 1) before hanging up, which turns "wrong key" into a clear error
// on both sides instead of an EOF on one.

// Role is the side a party takes in the handshake. Exactly one side of a
// connection must be RoleClient (normally the dialler).
type Role uint8

const (
	RoleClient Role = 1
	RoleServer Role = 2
)

func (r Role) String() string {
	switch r {
	case RoleClient:
		return "client"
	case RoleServer:
		return "server"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// DefaultHandshakeTimeout bounds a handshake whose context has no earlier
// deadline. A healthy handshake takes two round trips, well under a
// millisecond on a LAN; the bound only matters against silent peers.
const DefaultHandshakeTimeout = 10 * time.Second

// Errors a handshake can fail with, wrapped with the peer's address.
var (
	// ErrNotHandshake: the peer sent bytes that are not our protocol
	// (garbage, a port scanner, another program), or closed early.
	ErrNotHandshake = errors.New("not an hcclrun handshake")
	// ErrAuth: the peer's proof did not verify, or the peer rejected
	// ours: the two sides hold different job keys (or someone replayed or
	// tampered with a handshake).
	ErrAuth = errors.New("authentication failed (different job key?)")
)

const (
	hsMagic     = "HCHS"
	hsVersion   = 1
	nonceSize   = 32
	macSize     = sha256.Size
	hsHelloSize = len(hsMagic) + 1 + helloSize + nonceSize
	hsLabel     = "hcclrun-handshake-v1"
	statusOK    = 0
	statusNo    = 1
)

// aLongTimeAgo is a deadline in the past: setting it makes a blocked Read
// or Write return at once.
var aLongTimeAgo = time.Unix(1, 0)

// Handshake authenticates conn with key, taking role, and returns the
// identity the peer proved. It sets and then clears conn's deadline: the
// handshake ends by ctx's deadline or DefaultHandshakeTimeout, whichever is
// sooner, and cancelling ctx aborts it. On error the caller should close
// conn; Handshake does not.
func Handshake(ctx context.Context, conn net.Conn, key []byte, role Role, me Hello) (peer Hello, err error) {
	if len(key) < MinKeySize {
		return Hello{}, fmt.Errorf("wire: handshake: job key of %d bytes, want at least %d", len(key), MinKeySize)
	}
	if role != RoleClient && role != RoleServer {
		return Hello{}, fmt.Errorf("wire: handshake: invalid %v", role)
	}
	deadline := time.Now().Add(DefaultHandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return Hello{}, fmt.Errorf("wire: handshake with %v: %w", conn.RemoteAddr(), err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(aLongTimeAgo) })
	if role == RoleClient {
		peer, err = clientHandshake(conn, key, me)
	} else {
		peer, err = serverHandshake(conn, key, me)
	}
	if !stop() {
		// ctx ended while we were working and its callback has moved the
		// deadline into the past (or is about to): the connection is no
		// good to the caller even if the exchange itself finished.
		if err == nil {
			err = ctx.Err()
		} else {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
	}
	if err != nil {
		return Hello{}, fmt.Errorf("wire: handshake (%v) with %v: %w", role, conn.RemoteAddr(), err)
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return Hello{}, fmt.Errorf("wire: handshake with %v: %w", conn.RemoteAddr(), err)
	}
	return peer, nil
}

// helloMsg builds the first message of either side with a fresh nonce.
func helloMsg(me Hello) ([]byte, error) {
	b := make([]byte, hsHelloSize)
	copy(b, hsMagic)
	b[len(hsMagic)] = hsVersion
	me.put(b[len(hsMagic)+1:])
	if _, err := rand.Read(b[len(hsMagic)+1+helloSize:]); err != nil {
		return nil, err
	}
	return b, nil
}

// readHello reads the peer's first message. The magic is read and checked
// on its own first, so that garbage fails after 5 bytes rather than after
// waiting for 46.
func readHello(r io.Reader) (h Hello, nonce []byte, err error) {
	b := make([]byte, hsHelloSize)
	if _, err := io.ReadFull(r, b[:len(hsMagic)+1]); err != nil {
		return Hello{}, nil, readErr(err)
	}
	if string(b[:len(hsMagic)]) != hsMagic {
		return Hello{}, nil, fmt.Errorf("%w: first bytes %q", ErrNotHandshake, b[:len(hsMagic)])
	}
	if v := b[len(hsMagic)]; v != hsVersion {
		return Hello{}, nil, fmt.Errorf("%w: protocol version %d, want %d", ErrNotHandshake, v, hsVersion)
	}
	if _, err := io.ReadFull(r, b[len(hsMagic)+1:]); err != nil {
		return Hello{}, nil, readErr(err)
	}
	h.get(b[len(hsMagic)+1:])
	return h, b[len(hsMagic)+1+helloSize:], nil
}

// readErr turns an early end of stream into ErrNotHandshake and keeps
// timeouts and other I/O errors as they are.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: peer closed the connection", ErrNotHandshake)
	}
	return err
}

// proof computes the MAC of the given role over the transcript.
func proof(key []byte, role Role, nc, ns []byte, hc, hs Hello) []byte {
	m := hmac.New(sha256.New, key)
	var hb [2 * helloSize]byte
	hc.put(hb[:])
	hs.put(hb[helloSize:])
	if role == RoleClient {
		m.Write([]byte("client"))
	} else {
		m.Write([]byte("server"))
	}
	m.Write([]byte(hsLabel))
	m.Write(nc)
	m.Write(ns)
	m.Write(hb[:])
	return m.Sum(nil)
}

func clientHandshake(conn net.Conn, key []byte, me Hello) (Hello, error) {
	mine, err := helloMsg(me)
	if err != nil {
		return Hello{}, err
	}
	if _, err := conn.Write(mine); err != nil {
		return Hello{}, err
	}
	peer, ns, err := readHello(conn)
	if err != nil {
		return Hello{}, err
	}
	nc := mine[len(hsMagic)+1+helloSize:]
	if _, err := conn.Write(proof(key, RoleClient, nc, ns, me, peer)); err != nil {
		return Hello{}, err
	}
	var ans [1 + macSize]byte
	if _, err := io.ReadFull(conn, ans[:]); err != nil {
		return Hello{}, readErr(err)
	}
	if ans[0] != statusOK {
		return Hello{}, fmt.Errorf("%w: %v rejected our proof", ErrAuth, peer)
	}
	if !hmac.Equal(ans[1:], proof(key, RoleServer, nc, ns, me, peer)) {
		return Hello{}, fmt.Errorf("%w: proof of %v does not verify", ErrAuth, peer)
	}
	return peer, nil
}

func serverHandshake(conn net.Conn, key []byte, me Hello) (Hello, error) {
	peer, nc, err := readHello(conn)
	if err != nil {
		return Hello{}, err
	}
	mine, err := helloMsg(me)
	if err != nil {
		return Hello{}, err
	}
	if _, err := conn.Write(mine); err != nil {
		return Hello{}, err
	}
	ns := mine[len(hsMagic)+1+helloSize:]
	got := make([]byte, macSize)
	if _, err := io.ReadFull(conn, got); err != nil {
		return Hello{}, readErr(err)
	}
	var ans [1 + macSize]byte
	if !hmac.Equal(got, proof(key, RoleClient, nc, ns, peer, me)) {
		ans[0] = statusNo
		_, _ = conn.Write(ans[:]) // best effort: tell the client why we hang up
		return Hello{}, fmt.Errorf("%w: proof of %v does not verify", ErrAuth, peer)
	}
	ans[0] = statusOK
	copy(ans[1:], proof(key, RoleServer, nc, ns, peer, me))
	if _, err := conn.Write(ans[:]); err != nil {
		return Hello{}, err
	}
	return peer, nil
}
