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

func (e *SyntaxError) Error() string {
	where := e.Source
	if e.Line > 0 {
		where += ":" + strconv.Itoa(e.Line)
	}
	if e.Token == "" {
		return fmt.Sprintf("%s: %s", where, e.Msg)
	}
	return fmt.Sprintf("%s: %q: %s", where, e.Token, e.Msg)
}
