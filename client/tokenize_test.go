package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/slotserver"
)

// TestCountTokens checks the /tokenize client against servers that answer
// as vLLM does (count), with token IDs only, with a plain 404 (no such
// endpoint), with a model's 404, and with something that is not JSON.
func TestCountTokens(t *testing.T) {
	t.Parallel()
	var got []map[string]any
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		switch r.URL.Path {
		case "/count/tokenize":
			got = append(got, body)
			auth = append(auth, r.Header.Get("Authorization"))
			io.WriteString(w, `{"count":7,"max_model_len":4096,"tokens":[1,2,3,4,5,6,7]}`)
		case "/ids/tokenize":
			io.WriteString(w, `{"tokens":[5,6,7]}`)
		case "/model/tokenize":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"object":"error","message":"The model `+"`nope`"+` does not exist.","type":"NotFoundError","param":"model","code":404}`)
		case "/html/tokenize":
			io.WriteString(w, `<html>hello</html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()

	c := newTestClient(t, srv.URL+"/count/v1", Config{APIKey: "k"})
	if n, err := c.CountTokens(ctx, Tokenize{Model: "m", Prompt: " a b", Specials: true}); n != 7 || err != nil {
		t.Errorf("prompt: %d, %v", n, err)
	}
	if n, err := c.CountTokens(ctx, Tokenize{Model: "m", Prompt: " a b", Chat: true, System: "be brief"}); n != 7 || err != nil {
		t.Errorf("chat: %d, %v", n, err)
	}
	if len(got) != 2 {
		t.Fatalf("%d requests reached /tokenize, want 2", len(got))
	}
	if b := got[0]; b["prompt"] != " a b" || b["add_special_tokens"] != true || b["model"] != "m" || b["messages"] != nil {
		t.Errorf("prompt form sent %v", b)
	}
	msgs, _ := json.Marshal(got[1]["messages"])
	if string(msgs) != `[{"content":"be brief","role":"system"},{"content":" a b","role":"user"}]` || got[1]["add_generation_prompt"] != true || got[1]["prompt"] != nil {
		t.Errorf("chat form sent %v (messages %s)", got[1], msgs)
	}
	if auth[0] != "Bearer k" {
		t.Errorf("Authorization %q, want the API key", auth[0])
	}

	for _, tc := range []struct {
		name, path string
		n          int
		err        string
	}{
		{"token IDs only", "/ids", 3, ""},
		{"no endpoint", "/none", 0, "no /tokenize endpoint"},
		{"unknown model", "/model", 0, "does not exist"},
		{"not JSON", "/html", 0, "not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, srv.URL+tc.path, Config{})
			n, err := c.CountTokens(ctx, Tokenize{Model: "nope", Prompt: "x"})
			switch {
			case tc.err == "" && (err != nil || n != tc.n):
				t.Errorf("got %d, %v; want %d", n, err, tc.n)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), srv.URL)):
				t.Errorf("error %v, want one naming %s and saying %q", err, srv.URL, tc.err)
			}
		})
	}
}

// TestIssue20Tokenize is issue 20's llama.cpp /tokenize: it reads
// "content" and answers {"tokens": []} to the {"prompt": …} body vLLM
// reads, so every text counted 0 tokens. The client falls back on the
// body llama.cpp reads, keeps it for the next questions, counts the chat
// form through /apply-template, and says so when a server understands
// neither body.
func TestIssue20Tokenize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := slotserver.Start(t, slotserver.Config{Tokenize: "content"})
	c := newTestClient(t, srv.URL, Config{})
	if n, err := c.CountTokens(ctx, Tokenize{Model: "m", Prompt: "one two three"}); n != 3 || err != nil {
		t.Fatalf("llama.cpp body: %d, %v; want 3", n, err)
	}
	if n, err := c.CountTokens(ctx, Tokenize{Model: "m", Prompt: "one two three", Specials: true}); n != 4 || err != nil {
		t.Errorf("with add_special: %d, %v; want 4", n, err)
	}
	if got := srv.Received("/tokenize"); got != 3 {
		t.Errorf("%d requests to /tokenize, want 3: the dialect found is kept", got)
	}
	// "<|user|> one two three <|end|> <|assistant|>" and BOS.
	if n, err := c.CountTokens(ctx, Tokenize{Model: "m", Prompt: "one two three", Chat: true}); n != 7 || err != nil {
		t.Errorf("chat form: %d, %v; want 7", n, err)
	}

	vllm := slotserver.Start(t, slotserver.Config{Tokenize: "prompt"})
	cv := newTestClient(t, vllm.URL, Config{})
	if n, err := cv.CountTokens(ctx, Tokenize{Model: "m", Prompt: "one two three", Specials: true}); n != 4 || err != nil {
		t.Errorf("vLLM body: %d, %v; want 4", n, err)
	}

	deaf := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"tokens":[]}`)
	}))
	defer deaf.Close()
	cd := newTestClient(t, deaf.URL, Config{})
	_, err := cd.CountTokens(ctx, Tokenize{Model: "m", Prompt: "one two three"})
	if !errors.Is(err, ErrTokenizeNotUnderstood) || !strings.Contains(err.Error(), "this server's /tokenize did not understand the request") {
		t.Errorf("err = %v, want ErrTokenizeNotUnderstood", err)
	}
}
