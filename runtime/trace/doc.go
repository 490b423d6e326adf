// Package trace is what HCCL_TRACE and HCCL_REPORT record and how the
// records are read: a bounded ring of a rank's events (Ring), the file a
// rank writes (File, one JSON document per rank), the merge of a job's
// files into one Chrome Trace Event / Perfetto timeline (Merge), and the
// per-call summary of HCCL_REPORT (Summary, Report).
//
// Words: a call is one collective a program made (AllReduce #57); an op
// is one step's send, receive, reduction or copy inside it, as the
// executor ran it; wait is the part of a receive spent until the peer's
// first frame arrived, the time this rank waited for that peer.
//
// Times in a rank's file are nanoseconds of the rank's monotonic clock
// since File.Epoch (executor.Now); in its ring they are the executor's
// TraceNow ticks, which Fill places on that clock (Line). Merge places
// them on the launcher's clock: Epoch plus the rank's offset against the
// control plane (File.Clock), whose error bar is half the round trip it
// was measured with, so that ranks of different hosts line up to within
// that bar.
//
// The package does no I/O but WriteFile and ReadFile; it knows nothing of
// communicators.
package trace
