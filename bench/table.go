package bench

import (
	"fmt"
	"io"
	"strings"
)

// The table is nccl-tests' layout, column for column, so that scripts
// written for all_reduce_perf read it: size, count, type, redop, root, then
// time, algbw, busbw and #wrong out of place and in place. A row always has
// 13 fields; a placement that does not exist (in-place AlltoAll) or a check
// that was not run shows N/A. bench/mpi/mpibench.c prints the same. With
// --algos a 14th field names the algorithm.

func writeTableHeader(w io.Writer, algos bool) {
	algo, none := "", ""
	if algos {
		algo, none = "  algo", "      "
	}
	fmt.Fprintf(w, "#\n")
	fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "", "", "")
	fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s%s\n",
		"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", algo)
	fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s%s\n",
		"(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", none)
}

func formatRow(r *Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%12d  %12d  %8s  %6s  %6d", r.Bytes, r.Count, r.Type, r.RedOp, r.Root)
	writeResult(&b, &r.OutOfPlace)
	writeResult(&b, r.InPlace)
	if r.Algo != "" {
		fmt.Fprintf(&b, "  %s", r.Algo)
	}
	return b.String()
}

func writeResult(b *strings.Builder, r *Result) {
	if r == nil {
		fmt.Fprintf(b, "  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A")
		return
	}
	wrong := "N/A"
	if r.Wrong >= 0 {
		wrong = fmt.Sprint(r.Wrong)
	}
	fmt.Fprintf(b, "  %7s  %6.2f  %6.2f  %6s", formatTime(r.TimeUS), r.AlgBW, r.BusBW, wrong)
}

// formatTime keeps about four significant digits in seven columns, as
// nccl-tests does.
func formatTime(us float64) string {
	switch {
	case us >= 10000:
		return fmt.Sprintf("%7.0f", us)
	case us >= 100:
		return fmt.Sprintf("%7.1f", us)
	}
	return fmt.Sprintf("%7.2f", us)
}
