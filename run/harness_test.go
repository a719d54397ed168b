package run

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/servebench/servebench/report"
)

// TestClientLimitedChild is the child of TestClientLimited: run with
// GOMAXPROCS=1 against a source that outpaces it, it prints the summary.
func TestClientLimitedChild(t *testing.T) {
	if os.Getenv("SERVEBENCH_TEST_CHILD") != "limited" {
		t.Skip("run by TestClientLimited in a child process")
	}
	var body strings.Builder
	for i := range 256 {
		fmt.Fprintf(&body, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d\"},\"finish_reason\":null}]}\n\n", i)
	}
	body.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"z\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body.String()) // zero latency: the whole stream at once
	}))
	defer srv.Close()
	sc := parse(t, fmt.Sprintf("name: flood\ntarget: {url: %q, model: m}\nscrape: {enabled: false}\nload: {stages: [{concurrency: 256, duration: 2s}]}\n", srv.URL))
	sum, err := Run(context.Background(), sc, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	json.NewEncoder(os.Stdout).Encode(sum)
}

// TestClientLimited saturates the client on purpose: one core
// (GOMAXPROCS=1), 256 closed-loop streams, a source that sends each whole
// stream at once. The run must say it was limited by its client, in the
// summary's harness section and its warnings, whatever else the machine is
// doing (a busy machine only makes the client later).
func TestClientLimited(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2 s child run")
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestClientLimitedChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SERVEBENCH_TEST_CHILD=limited", "GOMAXPROCS=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	i := strings.Index(string(out), "{")
	var sum report.Summary
	if i < 0 || json.NewDecoder(strings.NewReader(string(out[i:]))).Decode(&sum) != nil {
		t.Fatalf("child printed no summary:\n%s", out)
	}
	h := sum.Harness
	if h == nil || !h.Limited || h.Cores != 1 {
		t.Fatalf("harness = %+v, want limited on 1 core", h)
	}
	t.Logf("limited: %s (CPU %.0f %%, wake-up lateness p99 %.1f ms)", h.Reason, 100*h.CPUShare, h.LatenessP99MS)
	if !strings.Contains(strings.Join(sum.Warnings, "\n"), "LIMITED BY THE CLIENT") {
		t.Errorf("warnings lack the verdict: %q", sum.Warnings)
	}
}
