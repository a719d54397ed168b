package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/vllmlog"
)

// statsLog writes a V1 log of stats lines from data, five bytes a line:
// the gap to the line before (1–64 s), running, waiting, prompt and
// generation throughput; KV usage follows the running count.
func statsLog(data []byte) string {
	var b strings.Builder
	b.WriteString("(APIServer pid=1) INFO 11-28 11:00:00 [api_server.py:1977] vLLM API server version 0.11.2\n")
	t := 60
	for i := 0; i+5 <= len(data) && i < 5*40; i += 5 {
		d := data[i : i+5]
		t += int(d[0]%64) + 1
		running, waiting := int(d[1]%40), int(d[2]%20)
		fmt.Fprintf(&b, "(APIServer pid=1) INFO 11-28 %02d:%02d:%02d [loggers.py:236] Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: 0.0%%\n",
			11+t/3600, t/60%60, t%60, float64(d[3])*37.5, float64(d[4])*3.3, running, waiting, float64(running)*2.4)
	}
	return b.String()
}

// FuzzBuild: whatever stats lines a log holds, Build refuses them with
// ErrTooFew or writes a replay whose scenario loads and whose requests
// are valid.
func FuzzBuild(f *testing.F) {
	f.Add([]byte{10, 6, 0, 0, 160, 10, 6, 0, 0, 150, 10, 6, 0, 0, 140})
	f.Add([]byte{10, 1, 0, 2, 30, 10, 0, 0, 0, 50, 10, 0, 0, 0, 0})
	f.Add([]byte{10, 10, 19, 255, 5, 10, 16, 18, 255, 10, 10, 22, 17, 255, 16})
	f.Add([]byte{5, 0, 0, 0, 0})
	f.Add([]byte{30, 3, 0, 0, 9, 60, 3, 0, 0, 8, 70, 0, 4, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := vllmlog.Parse(context.Background(), "fuzz.log", strings.NewReader(statsLog(data)), vllmlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Build(rep)
		if errors.Is(err, ErrTooFew) {
			return
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, statsLog(data))
		}
		for i, a := range r.Trace {
			if a.Input < 1 || a.Output < 1 || a.Input+a.Output > r.Config.MaxModelLen || a.At < 0 || (i > 0 && a.At < r.Trace[i-1].At) {
				t.Fatalf("arrival %d: %+v (max_model_len %d)", i, a, r.Config.MaxModelLen)
			}
		}
		sp, err := r.Write(t.TempDir(), false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := scenario.Load(sp); err != nil {
			t.Fatalf("the written scenario does not load: %v\n%s", err, statsLog(data))
		}
	})
}
