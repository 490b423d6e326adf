package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// rankStdin is what rank 0 reads: the launcher's stdin, unless that is a
// terminal of which hcclrun is not the foreground (started with &). Reading
// it then would stop hcclrun with SIGTTIN and the whole job with it; rank 0
// gets /dev/null instead, as a background shell command should.
func rankStdin(in io.Reader) io.Reader {
	f, ok := in.(*os.File)
	if !ok {
		return in
	}
	fg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	if err != nil {
		return in // not a terminal (ENOTTY), or no foreground group to compare
	}
	if fg != unix.Getpgrp() {
		return nil
	}
	return in
}
