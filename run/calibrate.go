package run

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// probeWords is the length of the text serverPrompts measures the
// server's overhead with.
const probeWords = 16

// serverPrompts builds the synthetic prompts of a scenario whose
// prompts.tokenizer is server, before any load: it finds, through the
// target's POST /tokenize, the words that count one token each under the
// server's tokenizer (tokenizer.Calibrate: about 240 small requests, 8 at
// a time), then measures what the server counts around a prompt of them
// (the chat template and system message, or the special tokens of a
// completions prompt) as the difference between the full and the bare
// count of one probe text. Nothing of this is on the request path.
//
// A server without /tokenize, or one whose tokenizer joins words, is the
// scenario's fault: *ConfigError.
func serverPrompts(ctx context.Context, cl *client.Client, sc *scenario.Scenario, sh scenario.Shard, progress io.Writer) (*scenario.Prompts, error) {
	began := time.Now()
	fail := func(err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("prompts.tokenizer server: %w", err)
		}
		return configErr("prompts.tokenizer server: %w", err)
	}
	model := sc.Target.Model
	count := func(ctx context.Context, text string) (int, error) {
		return cl.CountTokens(ctx, client.Tokenize{Model: model, Prompt: text})
	}
	words, err := tokenizer.Calibrate(ctx, tokenizer.Server, count, nil)
	if err != nil {
		return nil, fail(err)
	}
	probe := words.Text(probeWords, func(n int) int { return 7 % n })
	bare, err := count(ctx, probe)
	if err != nil {
		return nil, fail(err)
	}
	full := client.Tokenize{Model: model, Prompt: probe, Specials: true}
	if sc.Target.API == results.APIChat {
		full = client.Tokenize{Model: model, Prompt: probe, Chat: true, System: sc.Request.System}
	}
	whole, err := cl.CountTokens(ctx, full)
	if err != nil {
		return nil, fail(err)
	}
	overhead := whole - bare
	p, err := scenario.NewServerPrompts(ctx, sc, sh, words, overhead)
	if err != nil {
		return nil, &ConfigError{err}
	}
	if progress != nil {
		fmt.Fprintf(progress, "prompts calibrated on the server's /tokenize in %s: %d single-token words; it counts %d tokens around a prompt\n",
			time.Since(began).Round(time.Millisecond), words.Len(), overhead)
	}
	return p, nil
}
