package scrape

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/internal/redact"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape/profile"
)

// Scraper limits and defaults.
const (
	DefaultInterval     = time.Second                 // Config.Interval when zero
	MinInterval         = 100 * time.Millisecond      // shortest Config.Interval accepted
	DefaultTimeout      = 5 * time.Second             // Config.Timeout when zero
	DefaultFinalTimeout = 2 * time.Second             // Config.FinalTimeout when zero
	DefaultMaxScrapes   = 1 << 20                     // Config.MaxScrapes when zero
	MaxPageBytes        = 32 << 20                    // a larger page fails the scrape
	acceptHeader        = "text/plain; version=0.0.4" // the only format expfmt's text parser reads
)

// ErrNoMetricsEndpoint is wrapped by the warning a Scraper records when the
// target answers 404 or 501 for its metrics page: the server does not expose
// metrics (llama.cpp without --metrics, SGLang without --enable-metrics,
// Ollama).
var ErrNoMetricsEndpoint = errors.New("target has no metrics endpoint")

// Config configures a Scraper.
type Config struct {
	// URL is the metrics page, for example "http://127.0.0.1:8000/metrics".
	// Its host must be a loopback address or "localhost", unless
	// AllowRemote.
	URL string

	// AllowRemote allows a metrics page on another machine (the user's
	// explicit opt-in for the target).
	AllowRemote bool

	// Headers are sent with every scrape (a gateway's auth header).
	Headers map[string]string

	// TLS configures an https page; nil uses the system's roots.
	TLS *tls.Config

	// Secrets (the API key, header values) are removed from every error a
	// sample or a warning records, should the server echo one.
	Secrets []string

	// Interval is the time between scrapes: DefaultInterval when zero, at
	// least MinInterval.
	Interval time.Duration

	// Profile names the profile that reads the page ("vllm", "sglang",
	// "tgi", "llamacpp", "lmdeploy"). Empty or profile.Auto detects it from
	// the first page that carries a known prefix and keeps it.
	Profile string

	// Epoch is the run's epoch (client.Header.Started), read with its
	// monotonic clock: every Sample offset counts from it. Required.
	Epoch time.Time

	// HTTPClient sends the requests; nil uses a private client, whose
	// dialer checks every connection against the loopback policy. A copy
	// is used, with redirects restricted to loopback hosts (a client given
	// here dials as it was made to).
	HTTPClient *http.Client

	// Timeout bounds each scrape: DefaultTimeout when zero.
	Timeout time.Duration

	// FinalTimeout bounds the last scrape, made after the run's context
	// ends: DefaultFinalTimeout when zero.
	FinalTimeout time.Duration

	// MaxScrapes bounds the number of scrapes: DefaultMaxScrapes when zero.
	MaxScrapes int

	// Only keeps, on every page, the series whose label (the key)
	// carries one of the values: a DCGM page's gpu="0", or pod="vllm-0"
	// for the GPUs of the server under test (Parser.Only).
	Only map[string][]string
}

// Stats counts a Scraper's scrapes.
type Stats struct {
	OK     uint64 `json:"ok"`     // scrapes whose page was read
	Failed uint64 `json:"failed"` // scrapes emitted with an error
}

// Scraper scrapes one metrics page at a fixed interval. Run must be called
// at most once; Warnings and Stats are safe to call concurrently with Run.
type Scraper struct {
	cfg     Config
	http    *http.Client
	private bool // the http client is ours: close its idle connections at the end
	parser  *Parser
	profile string // configured, or detected and then fixed
	redact  *redact.Redactor
	buf     bytes.Buffer
	index   uint64

	started atomic.Bool
	ok      atomic.Uint64
	failed  atomic.Uint64

	mu       sync.Mutex
	warnings []error
	warned   map[string]bool
}

// New validates cfg, applies its defaults and returns a Scraper.
func New(cfg Config) (*Scraper, error) {
	policy := loopback.Policy{AllowRemote: cfg.AllowRemote}
	if err := policy.CheckURL(cfg.URL); err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	switch {
	case cfg.Interval == 0:
		cfg.Interval = DefaultInterval
	case cfg.Interval < MinInterval:
		return nil, fmt.Errorf("scrape: interval %v is shorter than %v", cfg.Interval, MinInterval)
	}
	if cfg.Epoch.IsZero() {
		return nil, errors.New("scrape: Epoch is required")
	}
	if cfg.Profile == profile.Auto {
		cfg.Profile = ""
	}
	if cfg.Profile != "" {
		if _, err := profile.ByName(cfg.Profile); err != nil {
			return nil, err
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.FinalTimeout <= 0 {
		cfg.FinalTimeout = DefaultFinalTimeout
	}
	if cfg.MaxScrapes <= 0 {
		cfg.MaxScrapes = DefaultMaxScrapes
	}
	s := &Scraper{cfg: cfg, parser: NewParser(), profile: cfg.Profile, warned: map[string]bool{},
		redact: redact.New(cfg.Secrets...)}
	for label, values := range cfg.Only {
		s.parser.Only(label, values...)
	}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		s.http = &c
	} else {
		s.http, s.private = &http.Client{Transport: newTransport(policy, cfg.TLS)}, true
	}
	s.http.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("stopped after 5 redirects")
		}
		return policy.CheckURL(req.URL.String())
	}
	return s, nil
}

// newTransport returns the private client's transport: no proxy, one
// connection, and the loopback policy checked again on every dial (a name
// that passed CheckURL may resolve elsewhere).
func newTransport(policy loopback.Policy, tlsConf *tls.Config) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.MaxIdleConnsPerHost = 1
	tr.TLSClientConfig = tlsConf
	tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: policy.DialControl()}).DialContext
	return tr
}

// Run scrapes once at once, then every Interval, and once more when ctx
// ends, under a short timeout of its own (FinalTimeout); it calls emit with
// each Sample, from Run's goroutine, and returns when ctx ends or after
// MaxScrapes scrapes. A failed scrape is emitted as a Sample with an error
// and counted, never returned; a scrape cut short by the end of ctx is
// dropped in favour of the final one. Run returns an error only when it is
// called twice.
func (s *Scraper) Run(ctx context.Context, emit func(results.Sample)) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("scrape: Run called twice")
	}
	if s.private {
		defer s.http.CloseIdleConnections()
	}
	if ctx.Err() == nil {
		s.scrape(ctx, emit)
	}
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if s.index >= uint64(s.cfg.MaxScrapes) {
			s.warn("max_scrapes", fmt.Errorf("scrape %s: stopped after %d scrapes", s.cfg.URL, s.cfg.MaxScrapes))
			return nil
		}
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.FinalTimeout)
			s.scrape(fctx, emit)
			cancel()
			return nil
		case <-t.C:
			s.scrape(ctx, emit)
		}
	}
}

// Warnings returns the non-fatal problems seen so far, each reported once:
// a target without a metrics endpoint (wrapping ErrNoMetricsEndpoint), a page
// with no known engine (wrapping ErrUnknownEngine), the first failure of
// each other kind.
func (s *Scraper) Warnings() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.warnings...)
}

// Stats returns the counts of scrapes so far.
func (s *Scraper) Stats() Stats {
	return Stats{OK: s.ok.Load(), Failed: s.failed.Load()}
}

// Profile returns the configured profile's name, or the detected one once a
// page has been read, or "" before that.
func (s *Scraper) Profile() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.profile
}

func (s *Scraper) since() time.Duration { return time.Since(s.cfg.Epoch) }

// scrape makes one request and emits its Sample, unless the run's context
// ended during it.
func (s *Scraper) scrape(ctx context.Context, emit func(results.Sample)) {
	smp, class, err := s.fetch(ctx)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return // cut short by the end of the run; the final scrape follows
		}
		err = redacted{s.redact.String(err.Error()), err}
		smp.OK, smp.Error = false, err.Error()
		smp.Reading = results.Reading{}
		s.failed.Add(1)
		s.warn(class, err)
	} else {
		smp.OK = true
		s.ok.Add(1)
	}
	smp.Index = s.index
	s.index++
	emit(smp)
}

// fetch requests and parses one page. On failure it also returns a short
// class naming the kind of failure, so each kind is warned about once.
func (s *Scraper) fetch(ctx context.Context) (results.Sample, string, error) {
	smp := results.Sample{Target: s.cfg.URL}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.URL, nil)
	if err != nil {
		return smp, "request", fmt.Errorf("scrape %s: %w", s.cfg.URL, err)
	}
	req.Header.Set("Accept", acceptHeader)
	for k, v := range s.cfg.Headers {
		req.Header.Set(k, v)
	}
	smp.Start = s.since()
	resp, err := s.http.Do(req)
	smp.At = s.since()
	if err != nil {
		smp.Duration = s.since() - smp.Start
		class := "connect"
		if errors.Is(err, context.DeadlineExceeded) {
			class = "timeout"
		}
		return smp, class, fmt.Errorf("scrape %s: %w", s.cfg.URL, err)
	}
	defer resp.Body.Close()
	smp.Status = resp.StatusCode
	s.buf.Reset()
	_, err = s.buf.ReadFrom(io.LimitReader(resp.Body, MaxPageBytes+1))
	smp.Duration = s.since() - smp.Start
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusNotImplemented {
			return smp, "no_endpoint", fmt.Errorf("scrape %s: %w (HTTP %d%s)", s.cfg.URL, ErrNoMetricsEndpoint, resp.StatusCode, excerpt(s.buf.Bytes()))
		}
		return smp, "http_status", fmt.Errorf("scrape %s: HTTP %d%s", s.cfg.URL, resp.StatusCode, excerpt(s.buf.Bytes()))
	}
	if err != nil {
		class := "read"
		if errors.Is(err, context.DeadlineExceeded) {
			class = "timeout"
		}
		return smp, class, fmt.Errorf("scrape %s: read page: %w", s.cfg.URL, err)
	}
	if s.buf.Len() > MaxPageBytes {
		return smp, "too_large", fmt.Errorf("scrape %s: page larger than %d bytes", s.cfg.URL, MaxPageBytes)
	}
	rd, err := s.parser.Parse(bytes.NewReader(s.buf.Bytes()), s.profile)
	smp.Duration = s.since() - smp.Start
	if err != nil {
		class := "parse"
		if errors.Is(err, ErrUnknownEngine) {
			class = "unknown_engine"
		}
		return smp, class, fmt.Errorf("scrape %s: %w", s.cfg.URL, err)
	}
	if s.profile == "" {
		s.mu.Lock()
		s.profile = rd.Profile
		s.mu.Unlock()
	}
	smp.Reading = rd
	return smp, "", nil
}

// redacted is an error whose text had secrets removed; it still wraps the
// original, so callers can test for ErrNoMetricsEndpoint.
type redacted struct {
	msg string
	err error
}

func (e redacted) Error() string { return e.msg }
func (e redacted) Unwrap() error { return e.err }

func (s *Scraper) warn(class string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warned[class] {
		return
	}
	s.warned[class] = true
	if class != "no_endpoint" && class != "unknown_engine" && class != "max_scrapes" {
		err = fmt.Errorf("%w (first failure of its kind; scraping goes on)", err)
	}
	s.warnings = append(s.warnings, err)
}

// excerpt returns the start of an error body, for messages.
func excerpt(b []byte) string {
	const max = 200
	t := strings.TrimSpace(string(b))
	if t == "" {
		return ""
	}
	if len(t) > max {
		t = t[:max] + "…"
	}
	return ": " + strings.Join(strings.Fields(t), " ")
}

// MetricsURL returns the default metrics page of an OpenAI-compatible
// target: its base URL with any trailing "/v1" replaced by "/metrics"
// ("http://127.0.0.1:8000/v1" → "http://127.0.0.1:8000/metrics").
func MetricsURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("metrics URL of %q: %w", base, err)
	}
	if u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("metrics URL of %q: not an absolute URL", base)
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/v1")
	u.Path, u.RawPath, u.RawQuery, u.Fragment = p+"/metrics", "", "", ""
	return u.String(), nil
}
