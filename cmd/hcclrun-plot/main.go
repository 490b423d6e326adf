// Command hcclrun-plot draws what `hcclrun bench --plot FILE` asks for: it
// reads the sweep's rows as JSON (the "rows" of bench's --json file) on
// standard input and writes busbw against size to FILE, SVG or PNG by the
// extension.
//
//	hcclrun-plot -title TITLE -o FILE.svg < rows.json
//
// hcclrun runs it from the directory of its own executable, else from
// PATH; make builds both into bin/. It is a module of its own so that the
// main module's go.mod lists only what the launcher and the runtime
// import, and hcclrun does not link the plotting library, whose package
// initialisation ran in every hcclrun start
// (docs/measurements.md#the-plot-apart).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/hcclrun/hcclrun/bench"
)

func main() {
	title := flag.String("title", "busbw", "the plot's title")
	out := flag.String("o", "", "the `FILE` to write (.svg or .png)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: hcclrun-plot -title TITLE -o FILE.svg|.png < rows.json")
		os.Exit(2)
	}
	var rows []bench.Row
	if err := json.NewDecoder(os.Stdin).Decode(&rows); err != nil {
		fmt.Fprintf(os.Stderr, "hcclrun-plot: reading the rows on stdin: %v\n", err)
		os.Exit(1)
	}
	if err := write(*out, *title, rows); err != nil {
		fmt.Fprintf(os.Stderr, "hcclrun-plot: %v\n", err)
		os.Exit(1)
	}
}
