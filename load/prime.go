package load

import (
	"fmt"
	"time"

	"github.com/servebench/servebench/results"
)

// Prime is a prime stage (load.stages[].prime): it sends each shared
// prefix of prompts.prefix_cache once, as long as the longest prompt's
// and asking for one token, from stage.concurrency workers, so that the
// stages after it find the prefixes in the server's cache. Its requests
// are warmup: they fill the cache, they are not measured. A shard sends
// the prefixes i ≡ Index (mod Count).
type Prime struct {
	base
	next   uint64 // the next prefix to send
	active int    // workers not yet retired
}

// Name implements Kind.
func (*Prime) Name() string { return "prime" }

// Describe implements Kind.
func (k *Prime) Describe() string {
	n := 0
	if c := k.sc.Prompts.PrefixCache; c != nil {
		n = k.t.shard.Share(c.Prefixes)
	}
	return fmt.Sprintf("prime the prefix cache: each of %d shared prefixes once, %d at a time, as warmup", n, k.st.Concurrency)
}

// Validate implements Kind: a prime stage runs under every driver.
func (*Prime) Validate(Caps) error { return nil }

func (k *Prime) exhausted() bool { return k.active == 0 }

func (k *Prime) start(s *stageRun) {
	k.next, k.active = uint64(k.t.shard.Index), k.st.Concurrency
	for range k.st.Concurrency {
		k.send(s, s.start)
	}
}

// send sends a worker's next prefix, or retires the worker.
func (k *Prime) send(s *stageRun, now time.Duration) {
	if k.next >= uint64(k.t.p.PrefixCount()) {
		k.active--
		return
	}
	i := int(k.next)
	k.next += k.t.step
	r := &Request{Seq: s.l.claim(), Stage: k.idx, Warmup: true, Scheduled: now}
	r.build = func() Content {
		p := k.t.p.Prime(i)
		return Content{Prompt: p.Text, InputTokens: p.InputTokens, MaxTokens: p.OutputTokens, Exact: k.t.exact}
	}
	s.l.send(r)
}

func (k *Prime) done(s *stageRun, now time.Duration, _ *Request, _ *results.Result, _ Reply) {
	k.send(s, now)
}
