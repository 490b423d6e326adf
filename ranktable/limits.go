package ranktable

// MaxRanks is the largest job a table may describe: 65536 ranks. The control
// plane answers a status query about that many ranks in one reply
// (netio/control.MaxStatusRanks) and the selector prices jobs up to it; more
// is a mistake (-np 99999999999) to refuse before any work, not a job.
const MaxRanks = 1 << 16

// MaxFileBytes bounds a rank table file: 64 MiB, several times what a table
// of MaxRanks ranks with long CPU lists takes, so that reading one (a rank
// at Init, `hcclrun ranktable --check`) cannot exhaust memory or read
// /dev/zero for ever.
const MaxFileBytes = 64 << 20

// maxQuoted bounds how much of a value an error quotes: enough to recognise
// it, never the megabytes of a broken file.
const maxQuoted = 80

// cut shortens s for an error message to maxQuoted bytes, on a UTF-8
// boundary, saying how long it was.
func cut(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	n := maxQuoted
	for n > 0 && s[n]&0xC0 == 0x80 {
		n-- // do not split a UTF-8 sequence
	}
	return s[:n] + "..."
}
