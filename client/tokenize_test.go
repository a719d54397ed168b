package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
