package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/servebench/servebench/results"
)

// fuzzKey is the API key FuzzHTTPErrorBody's client sends; it holds the
// characters JSON escapes.
const fuzzKey = `sk-fu"zz\key-0123`

// FuzzHTTPErrorBody (issue 22, item 10) gives the client's reading of an
// HTTP error answer arbitrary statuses and bodies, the engines' error
// shapes as seeds: it must never panic, must record the request as failed
// in the status's class with a bounded message that starts with the
// status, and must never let the API key through, in any form a body may
// echo it in.
func FuzzHTTPErrorBody(f *testing.F) {
	esc, _ := json.Marshal(fuzzKey)
	key := string(esc[1 : len(esc)-1])
	for _, seed := range []struct {
		status int
		body   string
	}{
		{401, `{"error":{"message":"invalid api key ` + key + `","type":"AuthenticationError","code":401}}`}, // vLLM
		{400, `{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}`},         // vLLM, older
		{422, `{"error":"Input validation error","error_type":"validation"}`},                                // TGI
		{500, `{"error":{"code":500,"message":"boom","type":"server_error"}}`},                               // llama.cpp
		{503, `{"detail":{"authorization":"Bearer ` + key + `"}}`},                                           // a shape not known
		{429, "rate limited, key " + fuzzKey},
		{502, "<html><body>bad gateway</body></html>"},
		{404, `{"error": {"message": "` + strings.Repeat("x", 2000) + key + `"}}`},
		{400, `{"error":{"message":"m","code":[1,[2,[3]]]}}`},
		{400, "\xff\xfe not utf-8"},
	} {
		f.Add(seed.status, []byte(seed.body))
	}
	c, err := New(Config{BaseURL: "http://127.0.0.1:9", APIKey: fuzzKey})
	if err != nil {
		f.Fatal(err)
	}
	defer c.Close()
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		status = 400 + (status%200+200)%200 // 400 to 599
		resp := &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Header: http.Header{},
			Body: io.NopCloser(bytes.NewReader(body))}
		var res results.Result
		c.httpError(&res, resp)
		class := results.ErrHTTP4xx
		if status >= 500 {
			class = results.ErrHTTP5xx
		}
		if res.Outcome != results.Failed || res.ErrorClass != class {
			t.Fatalf("status %d: %s %s", status, res.Outcome, res.ErrorClass)
		}
		if !strings.HasPrefix(res.Error, resp.Status) || len(res.Error) > len(resp.Status)+2+4*errorExcerptBytes {
			t.Fatalf("status %d: message of %d bytes: %.200q", status, len(res.Error), res.Error)
		}
		for _, form := range []string{fuzzKey, key} {
			if strings.Contains(res.Error, form) {
				t.Fatalf("the key (%q) is in the message %q", form, res.Error)
			}
		}
	})
}
