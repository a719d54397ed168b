package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/scenario"
)

// DryRun writes what a run of sc (validated, flags applied) would do,
// doing none of it: the resolved scenario, as the results header would
// record it, then the plan: where the load goes and its stages
// (Describe), the model, and the prompts. It reads the dataset and
// tokenizer files, so a bad one shows here, but it opens no connection
// and starts no simulator: nothing is sent.
func DryRun(ctx context.Context, w io.Writer, sc *scenario.Scenario, sh scenario.Shard) error {
	resolved, err := sc.Resolved()
	if err != nil {
		return err
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, resolved, "", "  "); err != nil {
		return err
	}
	p := &sc.Prompts
	var prompts string
	switch {
	case p.Tokenizer == tokenizer.Server:
		prompts = fmt.Sprintf("synthetic, %s input tokens, %s output tokens, exact under the server's tokenizer "+
			"(calibrated through its /tokenize when the run starts)", p.InputTokens, p.OutputTokens)
	default:
		built, err := scenario.NewShardPrompts(ctx, sc, sh, nil)
		if err != nil {
			return &ConfigError{err}
		}
		if p.Dataset.Path != "" {
			out := "from the file"
			if p.OutputTokens != nil {
				out = p.OutputTokens.String()
			}
			prompts = fmt.Sprintf("%d usable prompts of %s (%s), counted with %s; output tokens %s",
				built.Len(), sc.DatasetPath(), p.Dataset.Format, p.Tokenizer, out)
		} else {
			prompts = fmt.Sprintf("synthetic, %s input tokens, %s output tokens, exact under %s", p.InputTokens, p.OutputTokens, p.Tokenizer)
		}
	}
	if p.SharedPrefixTokens > 0 {
		prompts += fmt.Sprintf("; the first %d tokens shared", p.SharedPrefixTokens)
	}
	model := sc.Target.Model
	if model == "" {
		model = "the first one GET /v1/models lists, when the run starts"
	}
	_, err = fmt.Fprintf(w, "resolved scenario (as the results header records it):\n%s\n\nplan:\n%smodel: %s\nprompts: %s\n\ndry run: nothing was sent; run it without --dry-run\n",
		pretty.Bytes(), Describe(sc, sh), model, prompts)
	return err
}
