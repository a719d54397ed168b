package cli

import (
	"fmt"
	"io"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servebench/servebench/live"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/run"
)

// liveMetrics serves a run's client-side figures as Prometheus metrics
// while the run goes (package live): the run.Observer of
// 'bench run --metrics-addr'. It listens before the load, so a bad
// address is refused before anything is sent.
type liveMetrics struct {
	ln   net.Listener
	reg  *prometheus.Registry
	exp  *live.Exporter
	stop func()
	out  io.Writer // where the URL is announced; nil: nowhere
}

var (
	_ run.Observer       = (*liveMetrics)(nil)
	_ run.SampleObserver = (*liveMetrics)(nil)
)

// listenLive opens addr for the live metrics of a run (loopback unless
// allowRemote).
func listenLive(addr string, allowRemote bool, out io.Writer) (*liveMetrics, error) {
	ln, err := live.Listen(addr, allowRemote)
	if err != nil {
		return nil, err
	}
	return &liveMetrics{ln: ln, reg: prometheus.NewRegistry(), out: out}, nil
}

// Start implements run.Observer: the exporter is made and the page served.
func (m *liveMetrics) Start(l run.Live) error {
	exp, err := live.New(m.reg, live.Run{Scenario: l.Scenario, Target: l.Target, Model: l.Model, Version: l.Version,
		Started: l.Started, StageName: l.Spec.StageName, InFlight: l.InFlight, Stage: l.Stage, StageCount: l.StageCount,
		Chunks: l.Chunks, FirstTokens: l.FirstTokens, Cost: costOf(l.Spec)})
	if err != nil {
		return err
	}
	m.exp = exp
	m.stop = live.ServeListener(m.ln, m.reg)
	if m.out != nil {
		fmt.Fprintf(m.out, "live metrics: http://%s/metrics\n", m.ln.Addr())
	}
	return nil
}

// Observe implements run.Observer.
func (m *liveMetrics) Observe(r *results.Result) {
	if m.exp != nil {
		m.exp.Observe(r)
	}
}

// ObserveSample implements run.SampleObserver: GPU power and energy, and
// speculative decoding.
func (m *liveMetrics) ObserveSample(s *results.Sample) {
	if m.exp != nil {
		m.exp.ObserveSample(s)
	}
}

func costOf(s *results.Spec) *results.Cost {
	if s == nil {
		return nil
	}
	return s.Cost
}

// Close stops serving and closes the listener.
func (m *liveMetrics) Close() {
	if m.stop != nil {
		m.stop()
	}
	_ = m.ln.Close()
}
