package load

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/scenario"
)

// TestEmbeddingsBatchKeys checks that batched embeddings requests never
// repeat a text, within a request, across requests or across shards: with
// a dataset of 24 prompts split over 2 shards, 3 requests of 4 texts per
// shard use all 24 once.
func TestEmbeddingsBatchKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var data strings.Builder
	for i := range 24 {
		fmt.Fprintf(&data, "{\"prompt\": \"text number %d\", \"output_tokens\": 1}\n", i)
	}
	path := filepath.Join(dir, "texts.jsonl")
	if err := os.WriteFile(path, []byte(data.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf(`name: keys
target: {api: embeddings}
request: {batch: 4}
prompts: {dataset: {path: %q}}
load: {stages: [{concurrency: 2, requests: 6}]}
`, path)
	sc, err := scenario.Parse(filepath.Join(dir, "keys.yaml"), []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]uint64{}
	for i := range 2 {
		sh := scenario.Shard{Index: i, Count: 2}
		p, err := scenario.NewShardPrompts(t.Context(), sc, sh, nil)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := newTemplate(sc, p, sh)
		for k := range uint64(3) {
			seq := uint64(i) + 2*k
			req := tmpl.plain(seq)
			if len(req.Inputs) != 4 || req.MaxTokens != 0 {
				t.Fatalf("request %d: %d inputs, max_tokens %d: want 4 and none", seq, len(req.Inputs), req.MaxTokens)
			}
			for _, in := range req.Inputs {
				if o, dup := seen[in]; dup {
					t.Errorf("%q embedded by requests %d and %d", in, o, seq)
				}
				seen[in] = seq
			}
		}
	}
	if len(seen) != 24 {
		t.Errorf("%d distinct texts: want all 24", len(seen))
	}
}
