package main

import (
	"fmt"
	goruntime "runtime"
	"runtime/debug"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); without
// it the module version from the build info is used, if any.
var version = ""

func versionString() string {
	v := version
	if v == "" {
		v = "devel"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	return fmt.Sprintf("%s (%s %s/%s)", v, goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
}
