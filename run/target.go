package run

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/internal/inputfile"
	"github.com/servebench/servebench/internal/simurl"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/sim"
)

// runID returns a random identifier for a run's header.
func runID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// tlsConfig builds the TLS configuration of an https target: the CA
// bundle to trust, and verification off when the scenario asks for it.
// It returns nil for the defaults.
func tlsConfig(sc *scenario.Scenario) (*tls.Config, error) {
	t := sc.Target.TLS
	if t.CAFile == "" && !t.InsecureSkipVerify {
		return nil, nil
	}
	conf := &tls.Config{InsecureSkipVerify: t.InsecureSkipVerify} // #nosec G402 -- only on the user's explicit setting, warned in the summary
	if t.CAFile != "" {
		// A CA bundle is kilobytes; a system's whole bundle is under 1 MiB.
		pem, err := inputfile.ReadFile(sc.Path(t.CAFile), inputfile.Limit{What: "target.tls.ca_file", MaxBytes: 4 << 20})
		if err != nil {
			return nil, fmt.Errorf("target.tls.ca_file: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("target.tls.ca_file %s: no PEM certificate in it", sc.Path(t.CAFile))
		}
	}
	return conf, nil
}

// APIKey returns the API key a scenario names: the value of the
// environment variable target.api_key_env (read with getenv), or the first
// line of the file target.api_key_file; "" when it names none.
func APIKey(sc *scenario.Scenario, getenv func(string) string) (string, error) {
	switch {
	case sc.Target.APIKeyEnv != "":
		return getenv(sc.Target.APIKeyEnv), nil
	case sc.Target.APIKeyFile != "":
		b, err := inputfile.ReadFile(sc.Path(sc.Target.APIKeyFile), inputfile.Limit{What: "target.api_key_file", MaxBytes: 64 << 10})
		if err != nil {
			return "", fmt.Errorf("target.api_key_file: %w", err)
		}
		key, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimSpace(key), nil
	}
	return "", nil
}

// detectModel sets target.model to the first model the server lists.
func detectModel(ctx context.Context, cl *client.Client, sc *scenario.Scenario, baseURL string) error {
	models, err := cl.Models(ctx)
	var netErr *net.OpError
	switch {
	case errors.As(err, &netErr):
		// The server is not there: naming a model would not help.
		return fmt.Errorf("cannot reach %s: %w (is the server running?)", baseURL, err)
	case err != nil:
		return fmt.Errorf("detect model from %s/v1/models: %w (set target.model to skip detection)", baseURL, err)
	}
	if len(models) == 0 {
		return fmt.Errorf("detect model: %s/v1/models lists no model (set target.model)", baseURL)
	}
	if err := sc.Set("target.model", models[0]); err != nil {
		return fmt.Errorf("detected model %q: %w", models[0], err)
	}
	return nil
}

// startScraper scrapes the target's /metrics into the results stream while
// the load runs (once before it, periodically, and once after). It returns
// a function that stops the scraper, waits for its final scrape and records
// its warnings. A failed or missing scrape is never fatal.
func startScraper(sc *scenario.Scenario, baseURL string, epoch time.Time, records chan<- results.Record,
	warn func(source, msg string), secrets []string) (stop func()) {
	if sc.Scrape.Enabled != nil && !*sc.Scrape.Enabled {
		return func() {}
	}
	u := sc.Scrape.URL
	if u == "" {
		var err error
		if u, err = scrape.MetricsURL(baseURL); err != nil {
			warn("scrape", err.Error())
			return func() {}
		}
	}
	tlsConf, _ := tlsConfig(sc) // checked when the client was made
	s, err := scrape.New(scrape.Config{URL: u, Interval: sc.Scrape.Interval.D(), Profile: sc.Scrape.Profile, Epoch: epoch,
		AllowRemote: sc.Target.AllowRemote, Headers: sc.Target.Headers, TLS: tlsConf, Secrets: secrets})
	if err != nil {
		warn("scrape", err.Error())
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	first := make(chan struct{})
	var once sync.Once
	go func() {
		done <- s.Run(ctx, func(x results.Sample) {
			records <- results.SampleRecord(&x)
			once.Do(func() { close(first) })
		})
	}()
	// Wait for the scrape before the load (bounded: a hung /metrics must
	// not hold the run back).
	select {
	case <-first:
	case <-time.After(2 * time.Second):
	}
	return func() {
		cancel()
		if err := <-done; err != nil {
			warn("scrape", err.Error())
		}
		for _, w := range s.Warnings() {
			warn("scrape", w.Error())
		}
	}
}

// startTarget resolves the scenario's target URL, starting the built-in
// simulator in-process for sim://PRESET, with its log in dir. It refuses
// non-loopback targets.
func startTarget(ctx context.Context, sc *scenario.Scenario, dir string) (baseURL string, stop func(), err error) {
	if !simurl.Is(sc.Target.URL) {
		if err := sc.Policy().CheckURL(sc.Target.URL); err != nil {
			return "", nil, configErr("target.url %w", err)
		}
		return sc.Target.URL, func() {}, nil
	}
	cfg, err := sim.ConfigFromURL(sc.SimTarget())
	if err != nil {
		return "", nil, configErr("target.url %s: %w", sc.Target.URL, err)
	}
	logf, err := os.Create(filepath.Join(dir, FileSimLog))
	if err != nil {
		return "", nil, err
	}
	// The simulator is not tied to ctx: interrupting the run must not pull
	// the server from under the requests still finishing in their grace
	// period. It stops when the run returns.
	srv, err := sim.Listen(context.WithoutCancel(ctx), "127.0.0.1:0", cfg, logf)
	if err != nil {
		logf.Close()
		return "", nil, fmt.Errorf("start simulator: %w", err)
	}
	return srv.URL(), func() { srv.Close(); logf.Close() }, nil
}
