package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
	sc := parse(t, fmt.Sprintf("name: wrong\ntarget: {url: %q, model: x}\nload: {stages: [{concurrency: 2, requests: 6}]}\n", url))
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
