package client

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// chunkSample is one line of testdata/chunks: what the chunk is, and its
// bytes.
type chunkSample struct {
	where  string // file:line
	shapes []string
	data   []byte
}

func readChunkSamples(t testing.TB) []chunkSample {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "chunks", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no chunk samples: %v", err)
	}
	var out []chunkSample
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if line == "" || line[0] == '#' {
				continue
			}
			shape, data, ok := strings.Cut(line, "\t")
			if !ok {
				t.Fatalf("%s:%d: want SHAPE<TAB>JSON", f, n)
			}
			out = append(out, chunkSample{where: fmt.Sprintf("%s:%d", f, n),
				shapes: strings.Split(shape, ","), data: []byte(data)})
		}
	}
	return out
}

// sameFacts reports whether two readings of a chunk agree on every fact.
func sameFacts(a, b chunkScan) bool {
	return a.tokens == b.tokens && a.content == b.content && bytes.Equal(a.finish, b.finish) &&
		a.hasUsage == b.hasUsage && (!a.hasUsage || a.usage == b.usage) && a.timings == b.timings
}

// TestChunkShapes reads every chunk shape of the engines servebench knows
// (testdata/chunks: vLLM, SGLang, TGI, llama.cpp, OpenAI and others; role,
// content, reasoning, tool calls, finish, usage, error, [DONE]) with the
// scanner and with the full decoder: the scanner must read each one
// itself (an error excepted, which it leaves to the decoder) and agree
// with the decoder, and both must find what the shape says.
func TestChunkShapes(t *testing.T) {
	seen := map[string]int{}
	for _, c := range readChunkSamples(t) {
		for _, sh := range c.shapes {
			seen[sh]++
		}
		if slices.Contains(c.shapes, "done") {
			s := newStream()
			s.res = &results.Result{}
			if f := s.handleData(c.data, time.Now()); f != nil || !s.done {
				t.Errorf("%s: [DONE] not seen (failure %v)", c.where, f)
			}
			continue
		}
		got, _, ok := scanChunk(c.data, nil)
		want, fail := newStream().decodeFull(c.data)
		if slices.Contains(c.shapes, "error") {
			if ok || fail == nil || fail.class != results.ErrServerErrorEvent {
				t.Errorf("%s: an error chunk: scanner ok=%v, decoder %v", c.where, ok, fail)
			}
			continue
		}
		if fail != nil {
			t.Errorf("%s: decoder failed: %v", c.where, fail)
			continue
		}
		if !ok {
			t.Errorf("%s: the scanner declined a common chunk (it would cost the full decoder on every chunk)", c.where)
		} else if !sameFacts(got, want) {
			t.Errorf("%s: scanner %+v, decoder %+v", c.where, got, want)
		}
		checkShape(t, c, want)
	}
	for _, sh := range []string{"role", "content", "reasoning", "tool_call", "finish", "usage", "error", "done"} {
		if seen[sh] == 0 {
			t.Errorf("no %s chunk among the samples", sh)
		}
	}
}

// checkShape checks the decoder's facts against what the sample says it is.
func checkShape(t *testing.T, c chunkSample, f chunkScan) {
	t.Helper()
	has := func(s string) bool { return slices.Contains(c.shapes, s) }
	tokens := has("content") || has("reasoning") || has("tool_call")
	content := has("content") || has("tool_call")
	if f.tokens != tokens || f.content != content {
		t.Errorf("%s: tokens %v content %v, want %v %v", c.where, f.tokens, f.content, tokens, content)
	}
	if (f.finish != nil) != has("finish") {
		t.Errorf("%s: finish_reason %q, shape %v", c.where, f.finish, c.shapes)
	}
	if f.hasUsage != has("usage") {
		t.Errorf("%s: usage %v, shape %v", c.where, f.hasUsage, c.shapes)
	}
}

// TestScanTricky holds inputs where reading by bytes could go wrong: the
// scanner must agree with the decoder or decline.
func TestScanTricky(t *testing.T) {
	cases := []struct {
		in      string
		decline bool // the scanner must leave it to the decoder
	}{
		{`{"choices":[{"delta":{"Content":"x"}}]}`, true}, // the decoder matches names ignoring case
		{`{"choices":[{"delta":{"cont\u0065nt":"x"}}]}`, true},
		{`{"choices":[{"delta":{"content":"a"},"delta":{}}]}`, true}, // a repeated member merges
		{`{"choices":[null]}`, true},
		{`{"choices":[{"logprobs":{"content":[{"token":"a"}]},"delta":{"content":""}}]}`, false}, // logprobs' content is not the delta's
		{`{"id":"\"content\":\"x\"","choices":[]}`, false},
		{`{"choices":[{"delta":{"content":"\u0000"}}]}`, false},
		{`{"choices":[{"delta":{"content":"a` + "\x01" + `"}}]}`, true},
		{`{"usage":{"prompt_tokens":1e2}}`, true},
		{`{"usage":{"prompt_tokens":-0,"completion_tokens":null}}`, false},
		{`{"usage":{}}`, false},
		{`{"usage":null,"error":null,"choices":null}`, false},
		{`{"error":{"message":"x"}}`, true},
		{`{"choices":[{"finish_reason":"st\u006fp"}]}`, true},
		{`{"choices":[{"finish_reason":""}]}`, false},
		{`{"a":[1,2,{"b":[true,false,null,-1.5e+3]}],"choices":[]}`, false},
		{`{"a":01}`, true},
		{`{"a":1,}`, true},
		{`null`, true},
		{`{} x`, true},
		{` { "choices" : [ { "text" : "x" } ] } `, false},
		{`{"timings":{"cache_n":3,"prompt_ms":1.5,"draft_n":30,"draft_n_accepted":12}}`, false},
		{`{"timings":{"draft_n":30.0}}`, true},
		{`{"Timings":{"draft_n":30}}`, true},
		{`{"timings":{"Draft_N":30}}`, true},
		{`{"timings":{"draft_n":1,"draft_n":2}}`, true},
		{`{"timings":null,"usage":{"prompt_tokens":2}}`, false},
		{`{"timings":[]}`, true},
	}
	for _, c := range cases {
		got, _, ok := scanChunk([]byte(c.in), nil)
		want, fail := newStream().decodeFull([]byte(c.in))
		switch {
		case ok && c.decline:
			t.Errorf("%s: the scanner read it (%+v), want it declined", c.in, got)
		case !ok && !c.decline:
			t.Errorf("%s: the scanner declined it", c.in)
		case ok && fail != nil:
			t.Errorf("%s: the scanner read it, the decoder failed: %v", c.in, fail)
		case ok && !sameFacts(got, want):
			t.Errorf("%s: scanner %+v, decoder %+v", c.in, got, want)
		}
	}
}

// FuzzScanMatchesDecoder: for every input, the scanner either declines or
// finds exactly the facts the full decoder finds (and the decoder accepts
// the input).
func FuzzScanMatchesDecoder(f *testing.F) {
	for _, c := range readChunkSamples(f) {
		f.Add(c.data)
	}
	f.Add([]byte(`{"choices":[{"delta":{"Content":"x","tool_calls":[{"function":{"name":"f"}}]}}],"usage":{"prompt_tokens":3}}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		got, _, ok := scanChunk(v, nil)
		if !ok {
			return
		}
		want, fail := newStream().decodeFull(v)
		if fail != nil {
			t.Fatalf("%q: the scanner read it (%+v), the decoder failed: %v", v, got, fail)
		}
		if !sameFacts(got, want) {
			t.Fatalf("%q: scanner %+v, decoder %+v", v, got, want)
		}
	})
}

// mockBody returns a stream as mocksse (../shared/rigs/mocksse) writes it
// for the acceptance measurement: a role chunk, n one-token content
// chunks (the last with finish_reason), a usage chunk, [DONE].
func mockBody(n int) []byte {
	var b bytes.Buffer
	const head = `data: {"id":"chatcmpl-0000000000000000000000000000fa57","object":"chat.completion.chunk","created":1795698897,"model":"mock-model","choices":[{"index":0,"delta":`
	b.WriteString(head + `{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	words := []string{" the", " quick", " brown", " fox"}
	for i := range n {
		fin := `null}]}`
		if i == n-1 {
			fin = `"length","stop_reason":null}]}`
		}
		fmt.Fprintf(&b, "%s{\"content\":%q},\"logprobs\":null,\"finish_reason\":%s\n\n", head, words[i%len(words)], fin)
	}
	fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-0000000000000000000000000000fa57\",\"object\":\"chat.completion.chunk\",\"created\":1795698897,\"model\":\"mock-model\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"total_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", n+1, n)
	return b.Bytes()
}

// BenchmarkReceive is the receive path's cost per chunk over a 2,000-chunk
// mocksse stream held in memory, beside a raw reader that only counts
// "data:" lines over the same bytes with a buffer of the same size: the
// floor of reading SSE in Go. The figures to read are ns/chunk, and
// cpu-ns/chunk (the process's CPU time, which other processes on a busy
// machine do not inflate as they do wall time).
func BenchmarkReceive(b *testing.B) {
	const n = 2000
	body := mockBody(n)
	chunks := float64(bytes.Count(body, []byte("data:")))
	b.Run("raw", func(b *testing.B) {
		br := bufio.NewReaderSize(nil, readerBytes)
		var lines int
		cpu0 := cpuNow()
		for b.Loop() {
			br.Reset(bytes.NewReader(body))
			lines = 0
			for {
				line, err := br.ReadSlice('\n')
				if bytes.HasPrefix(line, []byte("data:")) {
					lines++
				}
				if err != nil {
					break
				}
			}
		}
		if float64(lines) != chunks {
			b.Fatalf("%d lines, want %v", lines, chunks)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(chunks*float64(b.N)), "ns/chunk")
		b.ReportMetric(float64(cpuNow()-cpu0)/(chunks*float64(b.N)), "cpu-ns/chunk")
	})
	b.Run("client", func(b *testing.B) {
		s := newStream()
		var res results.Result
		res.ChunkTimes = make([]time.Duration, 0, n+1)
		b.ReportAllocs()
		cpu0 := cpuNow()
		for b.Loop() {
			res = results.Result{ChunkTimes: res.ChunkTimes[:0]}
			if f, _ := pumpBytes(s, body, &res); f != nil || len(res.ChunkTimes) != n || res.OutputTokens != n {
				b.Fatalf("failure %v, %d chunks, %d tokens", f, len(res.ChunkTimes), res.OutputTokens)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(chunks*float64(b.N)), "ns/chunk")
		b.ReportMetric(float64(cpuNow()-cpu0)/(chunks*float64(b.N)), "cpu-ns/chunk")
	})
}

// FuzzTemplateMatchesDecoder: after a stream's chunk a taught the
// template, a chunk b it reads has exactly the facts the full decoder
// finds in b.
func FuzzTemplateMatchesDecoder(f *testing.F) {
	samples := readChunkSamples(f)
	for i := range samples {
		f.Add(samples[i].data, samples[(i+1)%len(samples)].data)
		f.Add(samples[i].data, samples[i].data)
	}
	body := bytes.Split(mockBody(3), []byte("\n\n"))
	f.Add(bytes.TrimPrefix(body[1], []byte("data: ")), bytes.TrimPrefix(body[2], []byte("data: ")))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		_, last, ok := scanChunk(a, nil)
		if !ok {
			return
		}
		var tmpl chunkTemplate
		tmpl.learn(a, last)
		var got chunkScan
		if !tmpl.match(b, &got) {
			return
		}
		want, fail := newStream().decodeFull(b)
		if fail != nil {
			t.Fatalf("%q after %q: the template read it (%+v), the decoder failed: %v", b, a, got, fail)
		}
		if !sameFacts(got, want) {
			t.Fatalf("%q after %q: template %+v, decoder %+v", b, a, got, want)
		}
	})
}

// TestTemplateReadsTokens checks that the template does read a stream's
// token chunks (else it would cost a full scan each) and that a chunk
// that differs elsewhere is not taken for one.
func TestTemplateReadsTokens(t *testing.T) {
	lines := bytes.Split(bytes.TrimSpace(mockBody(50)), []byte("\n\n"))
	var tmpl chunkTemplate
	hits := 0
	for _, l := range lines[:len(lines)-1] { // all but [DONE]
		v := bytes.TrimPrefix(l, []byte("data: "))
		want, fail := newStream().decodeFull(v)
		if fail != nil {
			t.Fatal(fail)
		}
		if got := (chunkScan{}); tmpl.match(v, &got) {
			hits++
			if !sameFacts(got, want) {
				t.Fatalf("%s: template %+v, decoder %+v", v, got, want)
			}
			continue
		}
		_, last, ok := scanChunk(v, nil)
		if !ok {
			t.Fatalf("scanner declined %s", v)
		}
		tmpl.learn(v, last)
	}
	// The role chunk teaches a template the first token does not fit; the
	// first token teaches one the next 48 fit; the last token (with
	// finish_reason) and the usage chunk do not.
	if hits != 48 {
		t.Errorf("the template read %d of 50 token chunks, want 48", hits)
	}
	other := bytes.Replace(bytes.TrimPrefix(lines[3], []byte("data: ")), []byte(`"logprobs":null`), []byte(`"logprobs":5`), 1)
	if tmpl.match(other, &chunkScan{}) {
		t.Errorf("a chunk that differs outside its token fit the template")
	}
}

// cpuNow is the process's user + system CPU time, in ns.
func cpuNow() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
