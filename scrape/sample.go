package scrape

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/servebench/servebench/client"
)

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

// DecodeSample decodes one "kind":"scrape" line of a results file, as
// client.Reader.Raw returns it.
func DecodeSample(line []byte) (Sample, error) {
	var s Sample
	if err := json.Unmarshal(line, &s); err != nil {
		return Sample{}, fmt.Errorf("decode scrape sample: %w", err)
	}
	if s.Kind != client.KindScrape {
		return Sample{}, fmt.Errorf("decode scrape sample: kind is %q, want %q", s.Kind, client.KindScrape)
	}
	return s, nil
}

// MetricsURL returns the default metrics page of an OpenAI-compatible
// target: its base URL with any trailing "/v1" replaced by "/metrics"
// ("http://127.0.0.1:8000/v1" → "http://127.0.0.1:8000/metrics").
func MetricsURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("metrics URL of %q: %w", base, err)
	}
	if u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("metrics URL of %q: not an absolute URL", base)
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/v1")
	u.Path, u.RawPath, u.RawQuery, u.Fragment = p+"/metrics", "", "", ""
	return u.String(), nil
}
