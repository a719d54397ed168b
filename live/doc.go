// Package live serves a run's client-side figures as Prometheus metrics
// while the run goes, so a dashboard (deploy/grafana/servebench.json) or
// an alert can follow a long run before its report exists.
//
// It consumes each request record as the run's results writer writes it
// (Exporter.Observe), its scrape samples (Exporter.ObserveSample: GPU
// power and energy, speculative decoding; the cost follows the scenario's
// price) and the run's count of requests in flight, and
// produces counters and histograms in the caller's Prometheus registry,
// every stage's series at 0 from the start, and an HTTP /metrics page of
// that registry (Serve). It is off unless a
// run asks for it (run.Options.MetricsAddr): the results file, not this
// page, stays the record of the run.
package live
