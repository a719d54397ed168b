package results

import "fmt"

// Cost prices a run, by the hour of GPU time or by the token. Set either
// PerGPUHour (GPUs, or the GPU telemetry's count) or the per-1M-token
// prices; all in US dollars. A nil Cost prices nothing.
type Cost struct {
	// PerGPUHour is the price of one GPU for an hour (an instance's
	// hourly price over its GPUs).
	PerGPUHour float64 `yaml:"per_gpu_hour" json:"per_gpu_hour,omitempty"`
	// GPUs is the number of GPUs priced; zero takes the GPU telemetry's
	// count, and without telemetry the run's cost is unknown.
	GPUs int `yaml:"gpus" json:"gpus,omitempty"`
	// PerMTokInput and PerMTokOutput price a million prompt and output
	// tokens (an API's list prices).
	PerMTokInput  float64 `yaml:"per_mtok_input" json:"per_mtok_input,omitempty"`
	PerMTokOutput float64 `yaml:"per_mtok_output" json:"per_mtok_output,omitempty"`
}

// Hourly reports whether c prices GPU time rather than tokens.
func (c *Cost) Hourly() bool { return c != nil && c.PerGPUHour > 0 }

// Priced is the cost of a span of a run.
type Priced struct {
	USD float64 `json:"usd"`
	// Basis says how: "2 GPUs × 120 s at $2.49 per GPU-hour" or
	// "1000 prompt tokens at $0.15 and 500 output tokens at $0.6 per 1M".
	Basis string `json:"basis"`
}

// Of prices a span of seconds that used gpus GPUs (0: unknown) and
// processed the given prompt and output tokens; false when c is nil or
// an hourly price has no GPU count.
func (c *Cost) Of(seconds float64, gpus int, prompt, output float64) (Priced, bool) {
	switch {
	case c == nil:
		return Priced{}, false
	case c.Hourly():
		n := c.GPUs
		if n == 0 {
			n = gpus
		}
		if n <= 0 || seconds <= 0 {
			return Priced{}, false
		}
		usd := float64(n) * seconds / 3600 * c.PerGPUHour
		return Priced{USD: usd, Basis: fmt.Sprintf("%d GPUs × %.3g s at $%g per GPU-hour", n, seconds, c.PerGPUHour)}, true
	case c.PerMTokInput > 0 || c.PerMTokOutput > 0:
		usd := (prompt*c.PerMTokInput + output*c.PerMTokOutput) / 1e6
		return Priced{USD: usd, Basis: fmt.Sprintf("%.0f prompt tokens at $%g and %.0f output tokens at $%g per 1M", prompt, c.PerMTokInput, output, c.PerMTokOutput)}, true
	}
	return Priced{}, false
}
