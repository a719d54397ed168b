package run

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/servebench/servebench/internal/inputfile"
	"github.com/servebench/servebench/load"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// fakeServer is an OpenAI-compatible server built for one misbehaviour:
// chat answers what the test says; /v1/models lists model "m"; /metrics is
// absent (404), as on many servers.
func fakeServer(t *testing.T, chat http.HandlerFunc) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
	})
	mux.HandleFunc("/v1/chat/completions", chat)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func parse(t *testing.T, doc string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse("test.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestNoRequestSucceeds is issue 9's wrong model name: vLLM answers every
// request 404 with its error body. The run fails (exit 1 in the CLI) with
// the server's own words, which the summary keeps too.
func TestNoRequestSucceeds(t *testing.T) {
	t.Parallel()
	url := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"object":"error","message":"The model `+"`x`"+` does not exist.","type":"NotFoundError","param":null,"code":404}`)
	})
	sc := parse(t, fmt.Sprintf("name: wrong\ntarget: {url: %q, model: m}\nload: {stages: [{concurrency: 2, requests: 6}]}\n", url))
	sum, err := Run(context.Background(), sc, Options{Dir: t.TempDir()})
	if !errors.Is(err, ErrNoSuccess) || !strings.Contains(err.Error(), "The model `x` does not exist") || !strings.Contains(err.Error(), "http_4xx=6") {
		t.Fatalf("err = %v, want ErrNoSuccess with the server's message", err)
	}
	if sum == nil || len(sum.Overall.ErrorMessages["http_4xx"]) != 1 {
		t.Fatalf("summary error messages = %+v", sum)
	}
}

// TestTruncationWarned is issue 9's silent truncation: with ignore_eos, a
// server at its context limit stops early with finish_reason "length" and
// HTTP 200. The summary counts it and warns.
func TestTruncationWarned(t *testing.T) {
	t.Parallel()
	url := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, tok := range []string{"a", "b", "c"} {
			finish := "null"
			if i == 2 {
				finish = `"length"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":%s}]}\n\n", tok, finish)
		}
		io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3,\"total_tokens\":13}}\n\ndata: [DONE]\n\n")
	})
	sc := parse(t, fmt.Sprintf("name: short\ntarget: {url: %q}\nprompts: {output_tokens: 64}\nload: {stages: [{concurrency: 2, requests: 6}]}\n", url))
	sum, err := Run(context.Background(), sc, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Overall.Requests.Truncated != 6 {
		t.Errorf("truncated = %d, want 6", sum.Overall.Requests.Truncated)
	}
	if !strings.Contains(strings.Join(sum.Warnings, "\n"), "6 of 6 completed requests returned fewer output tokens than max_tokens") {
		t.Errorf("warnings = %q", sum.Warnings)
	}
}

// TestUnreachableTarget: a server that is not running is reported as
// such, without suggesting a model name that could not help.
func TestUnreachableTarget(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	sc := parse(t, fmt.Sprintf("name: down\ntarget: {url: %q}\nload: {stages: [{concurrency: 1, requests: 1}]}\n", url))
	_, err = Run(context.Background(), sc, Options{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "cannot reach") || strings.Contains(err.Error(), "target.model") {
		t.Errorf("err = %v", err)
	}
}

// TestHeadersKeyFileAndTLS: an https server with a private CA (the
// bundle passed as target.tls.ca_file), an API key read from a file, and a
// tenant header. Every request, the model listing included, carries the
// key and the header; the results header records the header's name, never
// its value, and no key. With insecure_skip_verify instead of the bundle
// the run still works and its summary warns.
func TestHeadersKeyFileAndTLS(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	mux := http.NewServeMux()
	record := func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Authorization") == "Bearer sk-file-key" && r.Header.Get("X-Tenant") == "bench-secret" {
			seen[r.URL.Path]++
		}
	}
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("sk-file-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tls string
		warns     bool
	}{
		{"ca bundle", "{ca_file: " + ca + "}", false},
		{"insecure", "{insecure_skip_verify: true}", true},
	} {
		sc := parse(t, fmt.Sprintf("name: tls\ntarget: {url: %q, api_key_file: %s, headers: {X-Tenant: bench-secret}, tls: %s}\n"+
			"scrape: {enabled: false}\nload: {stages: [{concurrency: 2, requests: 4}]}\n", srv.URL, keyFile, tc.tls))
		key, err := APIKey(sc, func(string) string { return "" })
		if err != nil || key != "sk-file-key" {
			t.Fatalf("%s: key %q, %v", tc.name, key, err)
		}
		out := filepath.Join(dir, tc.name)
		os.Mkdir(out, 0o755)
		sum, err := Run(context.Background(), sc, Options{Dir: out, APIKey: key})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if sum.Overall.Requests.OK != 4 {
			t.Errorf("%s: requests %+v %v", tc.name, sum.Overall.Requests, sum.Overall.ErrorMessages)
		}
		warned := strings.Contains(strings.Join(sum.Warnings, "\n"), "TLS certificate verification is off")
		if warned != tc.warns {
			t.Errorf("%s: insecure warning %v, want %v: %q", tc.name, warned, tc.warns, sum.Warnings)
		}
		data, _ := os.ReadFile(filepath.Join(out, FileResults))
		if bytes.Contains(data, []byte("bench-secret")) || bytes.Contains(data, []byte("sk-file-key")) ||
			!bytes.Contains(data, []byte(`"X-Tenant":"redacted"`)) {
			t.Errorf("%s: the results file leaks the header or the key, or lost the header's name", tc.name)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["/v1/models"] == 0 || seen["/v1/chat/completions"] != 8 {
		t.Errorf("requests with the key and the header: %v", seen)
	}
}

// TestDescribePrintsHostAndLoad: before it starts, a run names where its
// load goes and what it is, stage by stage.
func TestDescribePrintsHostAndLoad(t *testing.T) {
	t.Parallel()
	url := fakeServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	sc := parse(t, fmt.Sprintf(`name: shown
target: {url: %q, model: m}
scrape: {enabled: false}
load:
  stages:
    - {name: warm, concurrency: 3, requests: 3}
    - {name: burst, rate: 50, arrival: constant, requests: 5, max_concurrency: 9}
`, url))
	var progress strings.Builder
	Run(context.Background(), sc, Options{Dir: t.TempDir(), Progress: &progress})
	for _, want := range []string{"load goes to " + url + ", this machine", "stage warm: closed loop, 3 workers, 3 requests",
		"stage burst: open loop, constant arrivals at 50 req/s, at most 9 in flight, 5 requests"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	remote := parse(t, "name: far\ntarget: {url: \"http://10.9.8.7:8000\", allow_remote: true}\nload: {stages: [{concurrency: 1, requests: 1}]}\n")
	if d := Describe(remote, scenario.Shard{}); !strings.Contains(d, "http://10.9.8.7:8000, ANOTHER MACHINE") {
		t.Errorf("Describe(remote) = %q", d)
	}
}

// TestCircuitBreaker is issue 11's dead target: the server dies after ten
// requests. The run stops once nearly every recent request failed instead
// of sending the rest of 2,000 requests to a dead port; it says why and
// fails.
func TestCircuitBreaker(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			return
		}
		if n.Add(1) == 10 {
			go srv.Close() // the server dies
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	sc := parse(t, fmt.Sprintf("name: dies\ntarget: {url: %q, model: m}\nscrape: {enabled: false}\nload: {stages: [{concurrency: 4, requests: 2000}]}\n", srv.URL))
	sum, err := Run(context.Background(), sc, Options{Dir: t.TempDir()})
	if !errors.Is(err, load.ErrCircuitOpen) {
		t.Fatalf("err = %v, want the circuit breaker", err)
	}
	if sum == nil || sum.Overall.Requests.Failed > 60 || !strings.Contains(sum.Incomplete, "circuit breaker open: ") ||
		!strings.Contains(sum.Incomplete, "of the last 20 requests found no server") {
		t.Errorf("summary: requests %+v, incomplete %q", sum.Overall.Requests, sum.Incomplete)
	}
}

// TestSheddingIsMeasured is issue 22's overload test: a server that sheds
// nine requests in ten with 503 (a JSON body, as vLLM and proxies answer)
// is serving, and measuring how much it sheds is the point: the circuit
// breaker stays closed and all 200 requests are measured, the shed ones
// counted as HTTP 5xx.
func TestSheddingIsMeasured(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			return
		}
		if n.Add(1)%10 != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"message":"server overloaded, retry later","type":"ServiceUnavailableError","code":503}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	sc := parse(t, fmt.Sprintf("name: sheds\ntarget: {url: %q, model: m}\nscrape: {enabled: false}\nload: {stages: [{concurrency: 4, requests: 200}]}\n", srv.URL))
	sum, err := Run(context.Background(), sc, Options{Dir: t.TempDir()})
	if errors.Is(err, load.ErrCircuitOpen) {
		t.Fatalf("the breaker stopped a shedding server's run: %v", err)
	}
	if !errors.Is(err, ErrMostFailed) {
		t.Errorf("err = %v, want most requests failed", err)
	}
	r := sum.Overall.Requests
	if r.Scheduled != 200 || r.OK != 20 || r.Failed != 180 || r.Shed != 180 || sum.Overall.Errors[string(results.ErrHTTP5xx)] != 180 || sum.Incomplete != "" {
		t.Errorf("requests %+v, errors %v, incomplete %q: want all 200 measured, 180 shed", r, sum.Overall.Errors, sum.Incomplete)
	}
}

// TestSecretFilesCapped: an api_key_file or ca_file far larger than a key
// or a CA bundle is refused before it is read, naming the setting.
func TestSecretFilesCapped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("k"), 5<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	// (A device is refused earlier, by the scenario's validation.)
	for _, p := range []string{big} {
		sc := parse(t, fmt.Sprintf("name: caps\ntarget: {url: https://127.0.0.1:1, api_key_file: %s, tls: {ca_file: %s}}\n"+
			"load: {stages: [{concurrency: 1, requests: 1}]}\n", p, p))
		if _, err := APIKey(sc, func(string) string { return "" }); !errors.Is(err, inputfile.ErrTooLarge) || !strings.Contains(err.Error(), "target.api_key_file") {
			t.Errorf("api_key_file %s: %v", p, err)
		}
		if _, err := tlsConfig(sc); !errors.Is(err, inputfile.ErrTooLarge) || !strings.Contains(err.Error(), "target.tls.ca_file") {
			t.Errorf("ca_file %s: %v", p, err)
		}
	}
}
