package scrape

import "time"

// Sample is the record of one scrape: a "kind":"scrape" line in the results
// file, beside the request records (client.Result). Times are offsets from
// the run's epoch (client.Header.Started) on the monotonic clock, encoded in
// nanoseconds, like the request records' offsets.
//
// A failed scrape is a Sample too, with OK false and Error set; it carries
// no values.
type Sample struct {
	Kind   string `json:"kind"`   // always client.KindScrape
	Index  uint64 `json:"index"`  // 0 for the first scrape of a Scraper, then 1, 2, …
	Target string `json:"target"` // URL scraped

	Start    time.Duration `json:"start_ns"`    // just before the request was sent
	At       time.Duration `json:"at_ns"`       // the response headers arrived (or the failure was seen): the time the values describe
	Duration time.Duration `json:"duration_ns"` // from Start until the page was read and parsed

	OK     bool   `json:"ok"`
	Status int    `json:"status,omitempty"` // HTTP status, when a response arrived
	Error  string `json:"error,omitempty"`  // why the scrape failed

	// Reading holds the page's values: the profile name, the aggregate
	// values and histograms, per-engine values and the metric each meaning
	// was read from. Counters and histograms are raw cumulative values;
	// Rates turns successive samples into per-interval rates.
	Reading
}
