// Package correlate joins what the client saw with what the server
// reported on one timeline, and says what that explains: the memory-bound
// decode law, throughput against KV-cache usage, the client-versus-server
// cross-check, TTFT spent behind a queue, preemption attribution, and
// the figures each stage's saturation verdict rests on: what its load
// offered and was served, how long the client's cap held, and the
// server's queue against its ceiling (Load), and the queue's trend; and
// the GPU telemetry on the same windows (power, utilisation, SM and DRAM
// activity, the power limit: gpu.go), and each GPU's own power and
// utilisation series for the timeline's per-GPU panels (gpuseries.go).
//
// It consumes request records (results.Result) and scrape samples
// (results.Sample, the server's and the GPUs', told apart by Reading.GPU)
// in any order, from any number of files, through a
// Correlator, which bins each request's contribution into fine time bins
// as it arrives, so memory follows the run's duration, not its tokens. It
// produces Windows (the timeline, cut at the scrape times) and a
// Correlation, the "correlation" section of summary.json. Its figures are
// data; package report decides the verdicts and writes the sentences that
// state them.
package correlate
