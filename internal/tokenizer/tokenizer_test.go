package tokenizer

import (
	"math/rand/v2"
	"testing"
)

func TestTextHasExactTokenCount(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"o200k_base", "cl100k_base"} {
		tok, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for _, n := range []int{0, 1, 2, 17, 128, 1000, 4097} {
			text := tok.Text(n, rng.IntN)
			if got := tok.Count(text); got != n {
				t.Errorf("%s: Text(%d) has %d tokens", name, n, got)
			}
		}
	}
}

func TestLoadUnknown(t *testing.T) {
	t.Parallel()
	if _, err := Load("nope"); err == nil {
		t.Fatal("Load(nope) succeeded")
	}
}
