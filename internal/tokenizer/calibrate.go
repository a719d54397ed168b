package tokenizer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"golang.org/x/sync/errgroup"
)

// CountFunc counts the tokens of a text as some tokenizer does, without
// the special tokens a server adds around a prompt. It must be safe for
// concurrent use.
type CountFunc func(ctx context.Context, text string) (int, error)

// calibrateWorkers bounds the counts in flight during a calibration: a
// server's /tokenize is cheap, but it shares the server with its traffic.
const calibrateWorkers = 8

// wantWords is how many single-token words Calibrate looks for: the
// common-word list gives about 230 under BPE vocabularies of 100k tokens
// or more; a smaller vocabulary's own words make up the rest.
const wantWords = 256

// Calibrate finds the words of this package's common-word list, then of
// extra (in order, until there are enough), that count one token each
// with a leading space under count, and checks that texts made of them
// add up: a text of n of them counts n. name names the tokenizer in the
// result and in errors.
//
// With a server's /tokenize as count, this is `prompts.tokenizer: server`:
// synthetic prompts made of these words have exactly their intended
// length under the server's own tokenizer. It makes one count per
// candidate word (about 230 for the common list) and a few for the check,
// at most calibrateWorkers at a time; ctx bounds them.
func Calibrate(ctx context.Context, name string, count CountFunc, extra []string) (*Words, error) {
	// The common words first, as listed (the simulator's output words
	// are indexes into this list: its order is part of its goldens); the
	// extra ones only while too few were found.
	seen := map[string]bool{}
	var cands []string
	for _, w := range vocabulary {
		seen[w] = true
		cands = append(cands, " "+w)
	}
	common := len(cands)
	for _, w := range extra {
		if w = strings.TrimSpace(w); w != "" && !seen[w] {
			seen[w] = true
			cands = append(cands, " "+w)
		}
	}
	one := make([]bool, len(cands))
	countBatch := func(from, to int) error {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(calibrateWorkers)
		for i := from; i < to; i++ {
			g.Go(func() error {
				n, err := count(gctx, cands[i])
				if err != nil {
					return fmt.Errorf("count %q: %w", cands[i], err)
				}
				one[i] = n == 1
				return nil
			})
		}
		return g.Wait()
	}
	if err := countBatch(0, common); err != nil {
		return nil, err
	}
	words := &Words{name: name}
	for i := range common {
		if one[i] {
			words.list = append(words.list, cands[i])
		}
	}
	for from := common; from < len(cands) && len(words.list) < wantWords; from += wantWords {
		to := min(from+wantWords, len(cands))
		if err := countBatch(from, to); err != nil {
			return nil, err
		}
		for i := from; i < to && len(words.list) < wantWords; i++ {
			if one[i] {
				words.list = append(words.list, cands[i])
			}
		}
	}
	if len(words.list) < minWords {
		return nil, fmt.Errorf("only %d words are one token each (want %d): synthetic prompts need a vocabulary of whole words", len(words.list), minWords)
	}
	// Texts of these words must add up: every word after every other one
	// (in a seeded order, three passes) counts one token.
	r := rand.New(rand.NewPCG(1, 2))
	for pass := range 3 {
		var b strings.Builder
		order := r.Perm(len(words.list))
		for _, i := range order {
			b.WriteString(words.list[i])
		}
		n, err := count(ctx, b.String())
		if err != nil {
			return nil, fmt.Errorf("count a text of %d words: %w", len(order), err)
		}
		if n != len(order) {
			return nil, fmt.Errorf("a text of %d single-token words counts %d tokens (pass %d): this tokenizer joins words, so synthetic prompts cannot have exact lengths under it",
				len(order), n, pass+1)
		}
	}
	return words, nil
}
