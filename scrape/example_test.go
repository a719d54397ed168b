package scrape_test

import (
	"fmt"
	"strings"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/scrape/profile"
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
	rd, err := scrape.NewParser().Parse(strings.NewReader(page), profile.Auto)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rd.Profile, rd.Values[results.KVUsage], rd.Values[results.Running])
	fmt.Println("engine 1:", rd.Engines["1"].Values[results.Running])
	fmt.Println("missing:", rd.Missing())
	// Output:
	// vllm 0.7 42
	// engine 1: 12
	// missing: [waiting preemptions prompt_tokens generation_tokens prefix_hits prefix_queries ttft itl e2e queue_time]
}
