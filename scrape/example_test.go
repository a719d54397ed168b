package scrape_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/servebench/servebench/scrape"
)

// A vLLM page with two data-parallel engines: KV usage is averaged, the
// running count summed, and each engine kept.
func ExampleParser_Parse() {
	page := `# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.9
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.5
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 30
vllm:num_requests_running{engine="1",model_name="m"} 12
`
	rd, err := scrape.NewParser().Parse(strings.NewReader(page), scrape.ProfileAuto)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rd.Profile, rd.Values[scrape.KVUsage], rd.Values[scrape.Running])
	fmt.Println("engine 1:", rd.Engines["1"].Values[scrape.Running])
	fmt.Println("missing:", rd.Missing())
	// Output:
	// vllm 0.7 42
	// engine 1: 12
	// missing: [waiting preemptions prompt_tokens generation_tokens prefix_hits prefix_queries ttft itl e2e queue_time]
}

// Counters become per-interval rates; a counter that goes down means the
// server restarted, and the new value is the increase.
func ExampleRates() {
	at := func(s int, tokens float64) scrape.Sample {
		return scrape.Sample{Kind: "scrape", At: time.Duration(s) * time.Second, OK: true,
			Reading: scrape.Reading{Snapshot: scrape.Snapshot{Values: scrape.Values{scrape.GenerationTokens: tokens}}}}
	}
	for _, iv := range scrape.Rates([]scrape.Sample{at(0, 1000), at(2, 1600), at(3, 250)}) {
		fmt.Printf("%v–%v: %.0f tok/s resets=%v\n", iv.From, iv.To, iv.Rates[scrape.GenerationTokens], iv.Resets)
	}
	// Output:
	// 0s–2s: 300 tok/s resets=[]
	// 2s–3s: 250 tok/s resets=[generation_tokens]
}
