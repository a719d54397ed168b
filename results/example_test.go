package results_test

import (
	"fmt"
	"time"

	"github.com/servebench/servebench/results"
)

// Counters become per-interval rates; a counter that goes down means the
// server restarted, and the new value is the increase.
func ExampleRates() {
	at := func(s int, tokens float64) results.Sample {
		return results.Sample{At: time.Duration(s) * time.Second, OK: true,
			Reading: results.Reading{Snapshot: results.Snapshot{Values: results.Values{results.GenerationTokens: tokens}}}}
	}
	for _, iv := range results.Rates([]results.Sample{at(0, 1000), at(2, 1600), at(3, 250)}) {
		fmt.Printf("%v–%v: %.0f tok/s resets=%v\n", iv.From, iv.To, iv.Rates[results.GenerationTokens], iv.Resets)
	}
	// Output:
	// 0s–2s: 300 tok/s resets=[]
	// 2s–3s: 250 tok/s resets=[generation_tokens]
}
