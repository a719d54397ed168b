package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSecretsNeverWritten is issue 11's leaked key: a server that echoes
// the API key and a header's value back — in a 401 body, in an in-stream
// error, in its model listing's refusal and in its /metrics errors. A run,
// a sweep and bench check write every file they write, and print to both
// streams, without the key or the header's value anywhere.
func TestSecretsNeverWritten(t *testing.T) {
	t.Parallel()
	const key, tenant = "sk-planted-4f1c9e", "tenant-secret-77"
	var n atomic.Int64
	echo := func(r *http.Request) string {
		return "invalid api key: " + r.Header.Get("Authorization") + " for " + r.Header.Get("X-Tenant")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/models" && r.URL.Query().Get("ok") == "":
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"`+echo(r)+`","type":"AuthenticationError","code":401}}`)
		case r.URL.Path == "/metrics":
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, echo(r))
		case strings.HasSuffix(r.URL.Path, "/chat/completions"):
			w.Header().Set("Content-Type", "text/event-stream")
			switch n.Add(1) % 3 {
			case 0:
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"error":{"message":"`+echo(r)+`","type":"AuthenticationError","code":401}}`)
			case 1:
				io.WriteString(w, `data: {"error":{"message":"`+echo(r)+`","type":"InternalServerError","code":500}}`+"\n\n")
			default:
				io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n")
			}
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	doc := func(model string) string {
		return fmt.Sprintf(`name: secrets
target: {url: %q, model: %q, api_key_env: SB_TEST_KEY, headers: {X-Tenant: %s}}
scrape: {interval: 200ms}
load: {stages: [{name: s, concurrency: 2, requests: 9}]}
budgets: {overall: {error_rate: {max: 0.9}}}
sweep: {parameters: {"load.stages[0].concurrency": [1, 2]}}
`, srv.URL, model, tenant)
	}
	withModel := filepath.Join(dir, "with-model.yaml")
	detect := filepath.Join(dir, "detect.yaml")
	os.WriteFile(withModel, []byte(doc("m")), 0o644)
	os.WriteFile(detect, []byte(doc("")), 0o644)
	var streams bytes.Buffer
	cli := func(args ...string) int {
		e, out, errb := testEnv()
		e.noPlots = raceEnabled && args[0] != "run" // a run's report.html is one of the outputs searched
		e.getenv = func(name string) string {
			if name == "SB_TEST_KEY" {
				return key
			}
			return ""
		}
		err := bench(context.Background(), e, args)
		streams.Write(out.Bytes())
		streams.Write(errb.Bytes())
		if err != nil {
			fmt.Fprintf(&streams, "bench: %v\n", err) // as main prints it
		}
		return exitCode(err)
	}
	runDir := filepath.Join(dir, "run")
	// Two requests in three fail by design: the run exits 1, its files
	// written all the same.
	if code := cli("run", withModel, "--out", runDir); code != exitFailed {
		t.Fatalf("run: exit %d\n%s", code, streams.String())
	}
	if code := cli("run", detect, "--out", filepath.Join(dir, "detect")); code != exitFailed {
		t.Errorf("run with a refused model listing: exit %d", code)
	}
	cli("sweep", withModel, "--out", filepath.Join(dir, "sweep"), "--quiet")
	cli("check", runDir, "--out", filepath.Join(dir, "check"))
	cli("report", runDir)
	if !strings.Contains(streams.String(), "[REDACTED]") {
		t.Errorf("no message was redacted: did the server's echo reach the output at all?\n%s", streams.String())
	}
	for _, secret := range []string{key, tenant} {
		if strings.Contains(streams.String(), secret) {
			t.Errorf("stdout or stderr holds %q", secret)
		}
	}
	files := 0
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".yaml") {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, secret := range []string{key, tenant} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds %q", path, secret)
			}
		}
		return nil
	})
	if files < 20 {
		t.Errorf("searched only %d files", files)
	}
}

// TestIssue22EncodedSecrets (issue 22, item 6): a key holding `"` and `\`
// echoed by the server JSON-escaped (in a body whose shape the client does
// not know, so it keeps the raw JSON) leaked into every output. Here the
// server echoes the key and a basic-auth header every way it can be
// written: JSON-escaped, URL-encoded, base64 of "user:key", and the
// header's decoded user:password. No form of either is in results.jsonl,
// summary.json, report.html, the CSV export, stdout or stderr.
func TestIssue22EncodedSecrets(t *testing.T) {
	t.Parallel()
	const key = `sk-pl"ant\ed-4f1c9e`
	const password = "hunter2-passphrase"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+password))
	jsonEsc := func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) }
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		user, pass, _ := r.BasicAuth()
		if dec, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(r.Header.Get("X-Proxy-Auth"), "Basic ")); err == nil {
			user, pass, _ = strings.Cut(string(dec), ":")
		}
		echo := fmt.Sprintf(`{"detail": {"authorization": "%s", "query": "key=%s", "basic": "%s", "proxy": "%s:%s"}}`,
			jsonEsc(auth), url.QueryEscape(auth), base64.StdEncoding.EncodeToString([]byte("bob:"+auth)), user, pass)
		switch {
		case r.URL.Path == "/metrics":
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, echo)
		case strings.HasSuffix(r.URL.Path, "/chat/completions"):
			switch n.Add(1) % 3 {
			case 0:
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, echo)
			case 1:
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, `data: {"error": `+echo+`}`+"\n\n")
			default:
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n")
			}
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	os.WriteFile(scen, []byte(fmt.Sprintf(`name: secrets
target: {url: %q, model: m, api_key_env: SB_TEST_KEY, headers: {X-Proxy-Auth: %q}}
scrape: {interval: 200ms}
load: {stages: [{name: s, concurrency: 2, requests: 9}]}
`, srv.URL, basic)), 0o644)
	var streams bytes.Buffer
	cli := func(args ...string) int {
		e, out, errb := testEnv()
		e.noPlots = raceEnabled && args[0] != "run" // a run's report.html is one of the outputs searched
		e.getenv = func(name string) string {
			if name == "SB_TEST_KEY" {
				return key
			}
			return ""
		}
		err := bench(context.Background(), e, args)
		streams.Write(out.Bytes())
		streams.Write(errb.Bytes())
		if err != nil {
			fmt.Fprintf(&streams, "bench: %v\n", err)
		}
		return exitCode(err)
	}
	runDir := filepath.Join(dir, "run")
	if code := cli("run", scen, "--out", runDir); code != exitFailed {
		t.Fatalf("run: exit %d\n%s", code, streams.String())
	}
	cli("report", runDir, "--format", "json")
	cli("report", runDir, "--format", "csv")
	if !strings.Contains(streams.String(), "[REDACTED]") {
		t.Fatalf("no message was redacted: did the server's echo reach the output?\n%s", streams.String())
	}
	forms := map[string]string{
		"key": key, "key JSON-escaped": jsonEsc(key), "key URL-encoded": url.QueryEscape(key),
		"base64 of bob:key": base64.StdEncoding.EncodeToString([]byte("bob:" + key)),
		"password":          password, "header": basic,
	}
	outputs := map[string][]byte{"stdout and stderr": streams.Bytes()}
	for _, name := range []string{"results.jsonl", "summary.json", "report.html"} {
		b, err := os.ReadFile(filepath.Join(runDir, name))
		if err != nil {
			t.Fatal(err)
		}
		outputs[name] = b
	}
	for out, b := range outputs {
		for what, form := range forms {
			if bytes.Contains(b, []byte(form)) {
				t.Errorf("%s holds the %s (%q)", out, what, form)
			}
		}
	}
}
