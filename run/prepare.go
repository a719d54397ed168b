package run

import (
	"fmt"
	"io"
	"time"

	"github.com/servebench/servebench/internal/inputfile"
	"github.com/servebench/servebench/scenario"
)

// prepareEvery is how often the preparation of prompts says how far it
// got; a preparation shorter than that says nothing.
const prepareEvery = 2 * time.Second

// prepareProgress returns the progress of the prompts' preparation
// (reading a dataset, counting its tokens) written to w as a line every
// prepareEvery; nil when w is nil.
func prepareProgress(w io.Writer) scenario.Progress {
	if w == nil {
		return nil
	}
	began := time.Now()
	last := began
	return func(step string, done, total int64, unit string) {
		now := time.Now()
		if now.Sub(last) < prepareEvery {
			return
		}
		last = now
		amount := func(n int64, withUnit bool) string {
			switch {
			case unit == "bytes":
				return inputfile.Size(n)
			case withUnit:
				return fmt.Sprintf("%d %s", n, unit)
			}
			return fmt.Sprint(n)
		}
		line := fmt.Sprintf("preparing prompts (%s): %s %s", now.Sub(began).Round(time.Second), step, amount(done, total <= 0))
		if total > 0 {
			line += fmt.Sprintf(" of %s (%.0f %%)", amount(total, true), 100*float64(done)/float64(total))
		}
		fmt.Fprintln(w, line+"; Ctrl-C stops")
	}
}
