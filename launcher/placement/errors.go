package placement

import (
	"fmt"
	"strconv"
)

// SyntaxError reports a host specification that does not parse: a hostfile
// line, a -H entry, a Slurm variable.
type SyntaxError struct {
	Source string // hostfile path, "-H", "SLURM_TASKS_PER_NODE", "hostlist", ...
	Line   int    // 1-based line in Source, 0 when Source is not a file
	Token  string // the offending token, as written
	Msg    string // what is wrong with it
}

// Error quotes at most maxQuoted bytes of the token, as every message of
// the package quotes what it was given: a 10 MB line must not make a 10 MB
// message.
func (e *SyntaxError) Error() string {
	where := e.Source
	if e.Line > 0 {
		where += ":" + strconv.Itoa(e.Line)
	}
	if e.Token == "" {
		return fmt.Sprintf("%s: %s", where, e.Msg)
	}
	if len(e.Token) > maxQuoted {
		return fmt.Sprintf("%s: %s (%d bytes): %s", where, quote(e.Token), len(e.Token), e.Msg)
	}
	return fmt.Sprintf("%s: %q: %s", where, e.Token, e.Msg)
}

// maxQuoted bounds how much of a token an error quotes: enough to find it
// in the file.
const maxQuoted = 80

// quote is s quoted for a message, cut to maxQuoted bytes.
func quote(s string) string { return strconv.Quote(cut(s)) }

// cut shortens s to maxQuoted bytes, on a UTF-8 boundary, marking the cut.
func cut(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	n := maxQuoted
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}
