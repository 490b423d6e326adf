// Package control is hcclrun's control plane: a small authenticated TCP
// service that the launcher runs for one job, and the client every rank
// uses to reach it.
//
// The service is a key-value store whose Get waits for the key to be put,
// named barriers over all ranks, an abort broadcast, and liveness: both
// sides send a heartbeat every HeartbeatInterval, and a side that hears
// nothing for LostAfter declares the other lost (hcclrun sets LostAfter
// from HCCL_HEARTBEAT_TIMEOUT; the default is DefaultLostAfter, 10 s, and
// the server tells every rank its value). A rank publishes its
// endpoints and topology facts with Put, reads its peers' with Get, meets
// them in a Barrier, and learns through Done that the job is over when any
// rank or the launcher aborts or the launcher disappears.
//
// Progress: the runtime marks each collective it enters and leaves with
// Client.SetProgress (one atomic store); the value rides on the
// heartbeats and on every Status request, and so does the word
// Client.Where, in which the runtime's executor stores where inside the
// call the rank waits (wire.Where: step and peer), for the launcher's
// hcclrun status (Server.Status only). Client.Status and Server.Status
// list every rank's state (not joined, alive, left, lost), last reported
// collective and silence, and Stragglers turns that list into the
// explanation of a timed-out collective: which ranks are STUCK (alive,
// heartbeating, behind), LOST (disconnected or silent for more than two
// heartbeats), LEFT or NOT JOINED.
//
// Clock: Client.Clock measures the rank's clock against the server's
// (Cristian's algorithm: the shortest of a few round trips, its midpoint,
// half of it as the error bar), for traces of ranks on several hosts.
//
// Reads are patient: a reader whose deadline passed while it was not
// scheduled (an oversubscribed host) would otherwise take its own lateness
// for the peer's silence, since Go fails a Read past its deadline without
// looking at the socket. So a timeout counts only when one more read,
// allowed one HeartbeatInterval, also finds nothing: a live peer's
// heartbeats are in the buffer and are read at once, a silent peer is
// lost after LostAfter plus that grace. A peer whose process dies is not
// waited for: its socket closes and the read fails at once. The retry is
// under the bufio.Reader, so no message is cut (patient.go).
//
// Every connection starts with netio's handshake (the job key), then
// carries length-prefixed binary messages capped at MaxValueSize plus a
// little; a connection that sends anything else is closed, and only that
// connection.
//
// The server never decides policy: it reports RankJoined, RankLeft,
// RankLost and RankAborted events and broadcasts the aborts it is asked
// for (a rank's own Abort, or the launcher's Server.Abort). Whether the loss
// of a rank aborts the job is the launcher's call (ServerConfig.AbortOnLost
// does it automatically).
package control
