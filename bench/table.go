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
	b.WriteString(formatCase(r))
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
	fmt.Fprintf(b, "  %7s  %6.2f  %6.2f  %6s", formatTime(r.TimeUS), r.AlgBW, r.BusBW, formatWrong(r.Wrong))
}

// formatCase is a row's first five fields: size, count, type, redop, root.
func formatCase(r *Row) string {
	return fmt.Sprintf("%12d  %12d  %8s  %6s  %6d", r.Bytes, r.Count, r.Type, r.RedOp, r.Root)
}

// formatWrong is the #wrong field: N/A when the result was not checked.
func formatWrong(wrong int64) string {
	if wrong < 0 {
		return "N/A"
	}
	return fmt.Sprint(wrong)
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

// With --first the table keeps the first five columns and then gives the
// out-of-place first call, the mean, the median and the slowest of the N
// calls, and #wrong: 10 fields. Under each row a comment line lists the N
// times and another the job's ranks, so that scripts reading rows skip them.

func writeFirstHeader(w io.Writer) {
	fmt.Fprintf(w, "#\n")
	fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s  %7s  %7s  %7s  %7s  %6s\n",
		"size", "count", "type", "redop", "root", "first", "mean", "median", "slowest", "#wrong")
	fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s  %7s  %7s  %7s  %7s  %6s\n",
		"(B)", "(elements)", "", "", "", "(us)", "(us)", "(us)", "(us)", "")
}

func formatFirstRow(r *Row) string {
	res := &r.OutOfPlace
	return fmt.Sprintf("%s  %7s  %7s  %7s  %7s  %6s", formatCase(r),
		formatTime(res.FirstUS), formatTime(res.TimeUS), formatTime(res.MedianUS), formatTime(res.SlowestUS), formatWrong(res.Wrong))
}

// formatFirstCalls is the comment line of a --first row's call times.
func formatFirstCalls(r *Row) string {
	var b strings.Builder
	b.WriteString("# first calls (us):")
	for _, us := range r.OutOfPlace.CallsUS {
		b.WriteString(" " + strings.TrimSpace(formatTime(us)))
	}
	return b.String()
}

// formatFirstJob is the comment line of the ranks of a --first row's job.
func formatFirstJob(r *Row) string {
	var b strings.Builder
	b.WriteString("# job:")
	for i, ri := range r.Job {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " rank %d pid %d on %s", ri.Rank, ri.Pid, ri.Host)
	}
	return b.String()
}
