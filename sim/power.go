package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// DCGM exporter field names the simulator's GPU page uses, as the
// exporter spells them (etc/default-counters.csv).
const (
	dcgmPowerUsage   = "DCGM_FI_DEV_POWER_USAGE"
	dcgmEnergy       = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
	dcgmGPUUtil      = "DCGM_FI_DEV_GPU_UTIL"
	dcgmPowerLimit   = "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"
	dcgmSMClock      = "DCGM_FI_DEV_SM_CLOCK"
	simSMClockMHz    = 1980 // reported SM clock
	maxSpecPositions = 64   // num_speculative_tokens accepted
)

// PathDCGM is where the simulator serves its DCGM-shaped GPU page when
// the power model is on.
const PathDCGM = "/dcgm/metrics"

// PowerModel reports whether the power model is on (idle_power_w and
// max_power_w set).
func (c *Config) PowerModel() bool { return c.IdlePowerW > 0 || c.MaxPowerW > 0 }

// NumGPUs is gpus, 1 when unset.
func (c *Config) NumGPUs() int { return max(c.GPUs, 1) }

func (c *Config) validatePower(bad badFunc) {
	if c.GPUs < 0 || c.GPUs > 1024 {
		bad("gpus", "want 1 to 1024, got %d", c.GPUs)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"idle_power_w", c.IdlePowerW}, {"max_power_w", c.MaxPowerW}, {"power_limit_w", c.PowerLimitW}, {"per_draft_token_us", c.PerDraftTokenUS}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			bad(f.name, "must be a number ≥ 0, got %g", f.v)
		}
	}
	if c.NumSpeculativeTokens < 0 || c.NumSpeculativeTokens > maxSpecPositions {
		bad("num_speculative_tokens", "want 0 to %d, got %d", maxSpecPositions, c.NumSpeculativeTokens)
	}
	if !(c.DraftAcceptance >= 0 && c.DraftAcceptance <= 1) {
		bad("draft_acceptance", "is a chance from 0 to 1, got %g", c.DraftAcceptance)
	}
	if !(c.DraftAcceptanceDecay >= 0 && c.DraftAcceptanceDecay <= 1) {
		bad("draft_acceptance_decay", "is a factor from 0 to 1, got %g", c.DraftAcceptanceDecay)
	}
}

// acceptance is the chance that draft position i is accepted when the
// earlier ones were.
func (c *Config) acceptance(i int) float64 {
	d := c.DraftAcceptanceDecay
	if d == 0 {
		d = 1
	}
	return c.DraftAcceptance * math.Pow(d, float64(i))
}

// maxPowerW is max_power_w, or idle_power_w when that is higher (each
// is set on its own, so neither may refuse the other).
func (c *Config) maxPowerW() float64 { return math.Max(c.MaxPowerW, c.IdlePowerW) }

// Occupancy is how full step b is, 0..1: the larger of its requests over
// max_num_seqs and its tokens (drafts included) over
// max_num_batched_tokens. The power model's power grows with it.
func (c *Config) Occupancy(b *Batch) float64 {
	occ := math.Max(float64(len(b.Reqs))/float64(c.MaxNumSeqs), float64(b.NumTokens()+b.DraftTokens)/float64(c.MaxNumBatchedTokens))
	return math.Min(occ, 1)
}

// stepPowerW is the power of all GPUs during step b.
func (e *Engine) stepPowerW(b *Batch) float64 {
	c := &e.cfg
	return float64(c.NumGPUs()) * (c.IdlePowerW + (c.maxPowerW()-c.IdlePowerW)*c.Occupancy(b))
}

// idlePowerW is the power of all GPUs between steps.
func (e *Engine) idlePowerW() float64 { return float64(e.cfg.NumGPUs()) * e.cfg.IdlePowerW }

// accountIdle books the idle energy up to t (a step starts at t).
func (e *Engine) accountIdle(t time.Time) {
	if t.After(e.pwrT) {
		e.stats.EnergyJ += e.idlePowerW() * t.Sub(e.pwrT).Seconds()
		e.pwrT = t
	}
}

// accountStep books step b's energy, at its end.
func (e *Engine) accountStep(b *Batch) {
	from := b.Start
	if e.pwrT.After(from) {
		from = e.pwrT
	}
	if b.End.After(from) {
		e.stats.EnergyJ += e.stepPowerW(b) * b.End.Sub(from).Seconds()
		e.stats.BusyTime += b.End.Sub(from)
	}
	e.pwrT = b.End
}

// Energy returns the energy all GPUs used from the engine's start to now,
// in joules, and the time steps ran; it is exact for the power model (0
// without one), including the part of a step in flight.
func (e *Engine) Energy() (joules float64, busy time.Duration) {
	now := e.clock.Now()
	joules, busy = e.stats.EnergyJ, e.stats.BusyTime
	if !e.cfg.PowerModel() {
		return 0, busy
	}
	b := e.inflight
	if b != nil && now.After(e.pwrT) {
		end := now
		if end.After(b.End) {
			end = b.End
		}
		if end.After(e.pwrT) {
			joules += e.stepPowerW(b) * end.Sub(e.pwrT).Seconds()
			busy += end.Sub(e.pwrT)
		}
		if now.After(b.End) {
			joules += e.idlePowerW() * now.Sub(b.End).Seconds()
		}
		return joules, busy
	}
	if now.After(e.pwrT) {
		joules += e.idlePowerW() * now.Sub(e.pwrT).Seconds()
	}
	return joules, busy
}

// GPUMeter turns an engine's cumulative energy and busy time into what
// a DCGM page shows: power and utilisation as means since the previous
// page. The zero value is ready; not safe for concurrent use.
type GPUMeter struct {
	at     time.Time
	energy float64
	busy   time.Duration
	seen   bool
}

// GPUReading is one DCGM page's worth of the simulated GPUs, per GPU.
type GPUReading struct {
	PowerW  float64 // mean power since the previous page
	EnergyJ float64 // since the engine started
	Util    float64 // share of the time since the previous page that steps ran, 0..1
	LimitW  float64
}

// Read returns the GPUs' figures at the engine's now.
func (m *GPUMeter) Read(e *Engine) GPUReading {
	now := e.clock.Now()
	energy, busy := e.Energy()
	n := float64(e.cfg.NumGPUs())
	r := GPUReading{EnergyJ: energy / n, LimitW: e.cfg.PowerLimitW}
	if r.LimitW == 0 {
		r.LimitW = e.cfg.maxPowerW()
	}
	if dt := now.Sub(m.at).Seconds(); m.seen && dt > 0 {
		r.PowerW = (energy - m.energy) / dt / n
		r.Util = math.Min(1, (busy-m.busy).Seconds()/dt)
	} else {
		r.PowerW = e.cfg.IdlePowerW
		if e.inflight != nil {
			r.PowerW = e.stepPowerW(e.inflight) / n
			r.Util = 1
		}
	}
	m.at, m.energy, m.busy, m.seen = now, energy, busy, true
	return r
}

// WriteDCGM writes r as a DCGM exporter's page for cfg's GPUs, with the
// exporter's HELP texts, types and labels (gpu, UUID, device, modelName,
// Hostname); energy in whole millijoules, as the exporter gives it.
func WriteDCGM(w io.Writer, r GPUReading, cfg Config) error {
	bw := bufio.NewWriter(w)
	family := func(name, typ, help string, v func(gpu int) string) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for g := range cfg.NumGPUs() {
			fmt.Fprintf(bw, "%s{gpu=\"%d\",UUID=\"GPU-5e000000-0000-4000-8000-%012d\",device=\"nvidia%d\",modelName=%q,Hostname=\"servebench-sim\"} %s\n",
				name, g, g, g, "servebench simulated GPU ("+cfg.Name+")", v(g))
		}
	}
	f := func(x float64) func(int) string {
		return func(int) string { return strconv.FormatFloat(x, 'f', 6, 64) }
	}
	family(dcgmSMClock, "gauge", "SM clock frequency (in MHz).", func(int) string { return strconv.Itoa(simSMClockMHz) })
	family(dcgmPowerUsage, "gauge", "Power draw (in W).", f(r.PowerW))
	family(dcgmEnergy, "counter", "Total energy consumption since boot (in mJ).", func(int) string {
		return strconv.FormatFloat(math.Floor(r.EnergyJ*1000), 'f', 0, 64)
	})
	family(dcgmGPUUtil, "gauge", "GPU utilization (in %).", func(int) string { return strconv.Itoa(int(math.Round(r.Util * 100))) })
	family(dcgmPowerLimit, "gauge", "Current power limit for the device (in W).", f(r.LimitW))
	return bw.Flush()
}
