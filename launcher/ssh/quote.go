package ssh

import "strings"

// Quote quotes s for a POSIX shell (sh, bash, dash, zsh), which is what sshd hands the
// command line to: the remote side then sees exactly s as one argument. Words made only
// of safe characters stay as they are, everything else goes into single quotes, with
// each ' written as '\”.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		if !isSafe(s[i]) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isSafe: characters with no meaning to the shell anywhere in a word. '=' is not among
// them (NAME=x first on a line is an assignment), nor '~' (home expansion).
func isSafe(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("@%+:,./-_", c) >= 0
}

// QuoteCommand joins args into one shell command line, each argument quoted.
func QuoteCommand(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
