package load

import (
	"fmt"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// The circuit breaker stops a run whose server is gone, so that a dead
// server costs seconds rather than the whole load's timeouts. It looks at
// the last load.circuit_breaker.window finished requests and trips when
// load.circuit_breaker.failures of them failed in a way that says nothing
// is serving: a refused or reset connection, a timeout, a response that is
// not the API's (not an event stream), or an HTTP error other than load
// shedding. A server that sheds load (429 Too Many Requests, 503 Service
// Unavailable) is serving, and measuring how much it sheds is the point of
// an overload test: such failures and errors inside a stream never count
// toward the breaker; neither do canceled requests.
type breaker struct {
	on       bool
	window   int
	share    float64
	recent   []bool
	next     int
	failures int
	tripped  string
}

// BreakerState is what the circuit breaker was set to and what it saw.
type BreakerState struct {
	Enabled  bool
	Window   int
	Failures float64 // the share of the window that trips it
	Tripped  string  // why it tripped; "" when it did not
}

// String says the setting, as the plan states it.
func (b BreakerState) String() string {
	if !b.Enabled {
		return "circuit breaker off"
	}
	return fmt.Sprintf("circuit breaker: stops the load when %.0f %% of the last %d requests found no server "+
		"(refused, timed out, not the API; shedding with 429 or 503 never counts)", b.Failures*100, b.Window)
}

func newBreaker(cb scenario.CircuitBreaker) breaker {
	return breaker{on: cb.Enabled != nil && *cb.Enabled && cb.Window >= 1, window: cb.Window, share: cb.Failures}
}

func (b *breaker) state() BreakerState {
	return BreakerState{Enabled: b.on, Window: b.window, Failures: b.share, Tripped: b.tripped}
}

// gone reports whether a failed request says the server is not serving.
func gone(res *results.Result) bool {
	switch res.ErrorClass {
	case results.ErrConnect, results.ErrTimeout, results.ErrNotSSE:
		return true
	case results.ErrHTTP4xx, results.ErrHTTP5xx:
		return !res.Shed()
	}
	return false
}

// add records a finished (not canceled) request and returns why the
// breaker trips now, or "".
func (b *breaker) add(res *results.Result) string {
	if !b.on || b.tripped != "" {
		return ""
	}
	failed := res.Outcome == results.Failed && gone(res)
	if len(b.recent) < b.window {
		b.recent = append(b.recent, failed)
	} else {
		if b.recent[b.next] {
			b.failures--
		}
		b.recent[b.next] = failed
		b.next = (b.next + 1) % b.window
	}
	if failed {
		b.failures++
	}
	if len(b.recent) < b.window || float64(b.failures) < b.share*float64(b.window) {
		return ""
	}
	b.tripped = fmt.Sprintf("%d of the last %d requests found no server (the last: %s: %s)",
		b.failures, b.window, res.ErrorClass, res.Error)
	return b.tripped
}
