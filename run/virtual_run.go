package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
)

// Simulate runs sc against the simulator configuration cfg in virtual time
// (see Run's Options.Virtual) and returns its summary, judged by the
// scenario's budgets when it has any. It writes nothing. sc must have
// passed Validate; its target is not read. observe, when not nil, is
// called with every record as it is produced (see Options.Observe).
func Simulate(ctx context.Context, sc *scenario.Scenario, cfg sim.Config, observe func(results.Record, int)) (*report.Summary, error) {
	hdr, spec, err := virtualHeader(sc, time.Now())
	if err != nil {
		return nil, &ConfigError{err}
	}
	w := &writer{agg: report.New(), observe: observe}
	w.put(results.HeaderRecord(hdr), 0)
	v, err := newVirtualClock(ctx, sc, cfg, DefaultGrace, w.put)
	if err != nil {
		return nil, err
	}
	runErr := v.run(ctx)
	sum := judge(w.agg, spec)
	if runErr == nil {
		runErr = noSuccess(sum)
	}
	return sum, runErr
}

// virtualHeader is the results header of a virtual-time run of sc started
// (in wall-clock time) at started.
func virtualHeader(sc *scenario.Scenario, started time.Time) (*results.Header, *results.Spec, error) {
	resolved, err := sc.Resolved()
	if err != nil {
		return nil, nil, err
	}
	spec, err := results.DecodeSpec(resolved)
	if err != nil {
		return nil, nil, err
	}
	return &results.Header{Schema: results.Schema, Tool: "servebench", Version: Version(), Started: started,
		Target: sc.Target.URL, Model: sc.Target.Model, Scenario: resolved, Ends: true, Spec: spec, Virtual: true}, spec, nil
}

// runVirtual is Run for Options.Virtual: the same outputs, from a
// virtual-time run of the scenario's simulator target.
func runVirtual(ctx context.Context, sc *scenario.Scenario, opts Options) (*report.Summary, error) {
	cfg, err := sim.ConfigFromURL(sc.SimTarget())
	if err != nil {
		return nil, configErr("target.url %s: %w", sc.Target.URL, err)
	}
	if sc.Target.Model == "" {
		if err := sc.Set("target.model", cfg.ServedModelName); err != nil {
			return nil, &ConfigError{err}
		}
	}
	hdr, spec, err := virtualHeader(sc, time.Now())
	if err != nil {
		return nil, &ConfigError{err}
	}
	w, err := createWriter(opts, nil)
	if err != nil {
		return nil, err
	}
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "running %q against %s in virtual time (model %s); results → %s\n",
			sc.Name, sc.Target.URL, sc.Target.Model, w.path)
	}
	w.put(results.HeaderRecord(hdr), 0)
	var runErr error
	if v, err := newVirtualClock(ctx, sc, cfg, graceOf(opts), w.put); err != nil {
		runErr = err
	} else {
		runErr = v.run(ctx)
	}
	runErr = errors.Join(runErr, w.close())
	return finish(opts, w.agg, spec, runErr)
}

// scrape records the engine's /metrics page as the scraper would have read
// it now, through the vLLM profile.
func (v *virtualClock) scrape() {
	at := v.now()
	v.page.Reset()
	s := results.Sample{Index: v.scrapes, Target: v.sc.Target.URL + "/metrics", Start: at, At: at, OK: true, Status: 200}
	v.scrapes++
	if err := sim.WriteMetrics(&v.page, v.eng.Stats(), v.cfg); err != nil {
		s.OK, s.Status, s.Error = false, 0, err.Error()
	} else if rd, err := v.parser.Parse(&v.page, "vllm"); err != nil {
		s.OK, s.Error = false, err.Error()
	} else {
		s.Reading = rd
	}
	v.put(results.SampleRecord(&s), len(v.live))
	if v.gpuParser != nil {
		v.scrapeGPU(at)
	}
	v.nextScrape = at + v.scrapeEvery
}

// scrapeGPU records the simulator's DCGM page (its power model) as the
// run's GPU scraper would have read it now.
func (v *virtualClock) scrapeGPU(at time.Duration) {
	v.page.Reset()
	s := results.Sample{Index: v.scrapes - 1, Target: v.sc.Target.URL + sim.PathDCGM, Start: at, At: at, OK: true, Status: 200}
	if err := sim.WriteDCGM(&v.page, v.meter.Read(v.eng), v.cfg); err != nil {
		s.OK, s.Status, s.Error = false, 0, err.Error()
	} else if rd, err := v.gpuParser.Parse(&v.page, "dcgm"); err != nil {
		s.OK, s.Error = false, err.Error()
	} else {
		s.Reading = rd
	}
	v.put(results.SampleRecord(&s), len(v.live))
}
