package live

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servebench/servebench/results"
)

// The efficiency metric names (GPU telemetry, the scenario's cost, the
// server's speculative decoding): rate(servebench_gpu_energy_joules_total)
// / rate(servebench_output_tokens_total) is joules per output token.
const (
	MetricGPUPower     = "servebench_gpu_power_watts"               // gauge: {source}, the latest power of the source's GPUs
	MetricGPUEnergy    = "servebench_gpu_energy_joules_total"       // counter: {source}, energy since the run's first GPU sample
	MetricCost         = "servebench_cost_usd_total"                // counter: the run's cost so far by the scenario's price
	MetricAcceptLength = "servebench_spec_decode_acceptance_length" // gauge: 1 + accepted ÷ drafts between the last two scrapes
)

// efficiency holds the live energy, cost and speculative-decoding metrics.
type efficiency struct {
	cost    *results.Cost
	started time.Time
	power   *prometheus.GaugeVec
	energy  *prometheus.CounterVec
	accept  prometheus.Gauge

	mu     sync.Mutex
	prev   map[string]results.Sample // the last GPU sample of each source
	engine *results.Sample           // the last engine sample with spec-decode counters
	gpus   int                       // GPUs the telemetry saw
	tokens [2]float64                // prompt and output tokens, for a per-token price
}

func newEfficiency(r Run) (*efficiency, []prometheus.Collector) {
	e := &efficiency{cost: r.Cost, started: r.Started, prev: map[string]results.Sample{},
		power:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricGPUPower, Help: "Power of the source's GPUs at its latest sample, watts (GPU telemetry)."}, []string{"source"}),
		energy: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricGPUEnergy, Help: "Energy of the source's GPUs since the run's first sample of it, joules (the energy counter, else power integrated)."}, []string{"source"}),
		accept: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricAcceptLength, Help: "Speculative decoding: tokens gained per step (1 + accepted ÷ drafts) between the last two scrapes."}),
	}
	cs := []prometheus.Collector{e.power, e.energy, e.accept}
	if r.Cost != nil {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: MetricCost,
			Help: "The run's cost so far, US dollars, by the scenario's price (per GPU-hour: from the run's start; per token: of the tokens received)."}, e.usd))
	}
	return e, cs
}

// usd is the run's cost so far.
func (e *efficiency) usd() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, _ := e.cost.Of(time.Since(e.started).Seconds(), e.gpus, e.tokens[0], e.tokens[1])
	return p.USD
}

func (e *efficiency) tokensOf(r *results.Result) {
	e.mu.Lock()
	e.tokens[0] += float64(r.PromptTokens)
	e.tokens[1] += float64(r.OutputTokens)
	e.mu.Unlock()
}

// sample takes one scrape sample: a GPU one moves power and energy, an
// engine one the acceptance length.
func (e *efficiency) sample(s *results.Sample) {
	if !s.OK {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !s.GPU {
		if _, ok := s.Values[results.SpecDrafts]; !ok {
			return
		}
		if p := e.engine; p != nil && s.At > p.At {
			if ivs := results.Rates([]results.Sample{*p, *s}); len(ivs) == 1 {
				if d := ivs[0].Deltas[results.SpecDrafts]; d > 0 {
					e.accept.Set(1 + ivs[0].Deltas[results.SpecAcceptedTokens]/d)
				}
			}
		}
		c := *s
		e.engine = &c
		return
	}
	e.gpus = max(e.gpus, len(s.Devices), len(s.Engines), 1)
	if w, ok := s.Values[results.GPUPowerW]; ok {
		e.power.WithLabelValues(s.Target).Set(w)
	}
	if prev, ok := e.prev[s.Target]; ok && s.At > prev.At {
		if en, ok := results.EnergyOver([]results.Sample{prev, *s}, prev.At, s.At); ok && en.Joules >= 0 {
			e.energy.WithLabelValues(s.Target).Add(en.Joules)
		}
	}
	e.prev[s.Target] = *s
}

// ObserveSample adds one scrape sample: the server's or the GPUs'.
func (x *Exporter) ObserveSample(s *results.Sample) {
	if x.eff != nil {
		x.eff.sample(s)
	}
}
