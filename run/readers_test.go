package run

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// zeroLatencySource serves every chat request a stream of n one-token
// chunks, written at once: a server that is never the bottleneck.
func zeroLatencySource(n int) *httptest.Server {
	var b strings.Builder
	for i := range n {
		fin := "null"
		if i == n-1 {
			fin = `"length"`
		}
		fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-z\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" t%d\"},\"logprobs\":null,\"finish_reason\":%s}]}\n\n", i%10, fin)
	}
	fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-z\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"total_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", n+1, n)
	body := b.String()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
}

// TestOneStreamReaderFlagged: one stream against a zero-latency source
// uses one core of several, so the process's CPU share cannot show that
// its reader is the bottleneck; the reader figures must (they did not
// exist, and the run said nothing).
func TestOneStreamReaderFlagged(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2 s run")
	}
	srv := zeroLatencySource(2000)
	defer srv.Close()
	sc := parse(t, fmt.Sprintf("name: one\ntarget: {url: %q, model: m}\nscrape: {enabled: false}\nload: {stages: [{concurrency: 1, duration: 2s}]}\n", srv.URL))
	sum, err := Run(context.Background(), sc, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	h := sum.Harness
	if h == nil || !h.Limited || !strings.Contains(h.Reason, "stream readers were the bottleneck") {
		t.Fatalf("harness = %+v, want the readers named", h)
	}
	t.Logf("flagged: busy %.2f, full reads %.2f, CPU %.2f of %d cores, others %.2f cores: %s",
		h.ReaderBusyShare, h.FullReadShare, h.CPUShare, h.Cores, h.OtherCores, h.Reason)
}

// TestQuickstartReadersNotFlagged: the quickstart (the paced simulator,
// in this process) keeps its readers waiting for tokens, so the reader
// rule and the CPU rule must stay silent. (Wake-up lateness depends on
// what else the machine runs; it is not asserted here.)
func TestQuickstartReadersNotFlagged(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("the quickstart takes about 15 s; skipped with -short and under the race detector")
	}
	doc, err := os.ReadFile("../scenarios/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc := parse(t, string(doc))
	sum, err := Run(context.Background(), sc, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	h := sum.Harness
	if h == nil {
		t.Fatal("no harness figures")
	}
	t.Logf("quickstart: busy %.2f, full reads %.2f, CPU %.2f of %d cores, others %.2f cores, lateness p99 %.1f ms; limited %v: %s",
		h.ReaderBusyShare, h.FullReadShare, h.CPUShare, h.Cores, h.OtherCores, h.LatenessP99MS, h.Limited, h.Reason)
	for _, rule := range []string{"stream readers", "cores during the load", "of its"} {
		if strings.Contains(h.Reason, rule) {
			t.Errorf("the quickstart was flagged by the %q rule: %s", rule, h.Reason)
		}
	}
}
