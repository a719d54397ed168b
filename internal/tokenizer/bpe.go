package tokenizer

import (
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// bpe is a BPE model as Hugging Face's tokenizers runs it: a piece starts
// as one symbol per character (per byte in the byte-level alphabet), and
// the adjacent pair whose merge comes first in the file's merge list is
// merged, then the next, until no listed merge applies.
type bpe struct {
	vocab        map[string]int
	merges       map[uint64]merge // (left id, right id) → merge
	unk          int              // id of the unknown token, −1 without one
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool // a piece in the vocabulary is one token, merges or not
}

type merge struct {
	rank  int // position in the merge list: lower merges first
	newID int
}

func pairKey(a, b int) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// newBPE builds the model; byteLevel says the pieces are spelt in the
// byte-level alphabet (the pre-tokenizer does it).
func newBPE(m *hfModel, byteLevel bool) (*bpe, error) {
	if p := m.ContinuingSubwordPrefix; p != nil && *p != "" {
		return nil, fmt.Errorf("model.continuing_subword_prefix %q is not supported", *p)
	}
	if s := m.EndOfWordSuffix; s != nil && *s != "" {
		return nil, fmt.Errorf("model.end_of_word_suffix %q is not supported", *s)
	}
	b := &bpe{vocab: m.Vocab, unk: -1, fuseUnk: m.FuseUnk, byteFallback: m.ByteFallback && !byteLevel, ignoreMerges: m.IgnoreMerges}
	if m.UnkToken != nil {
		id, ok := m.Vocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model.unk_token %q is not in the vocab", *m.UnkToken)
		}
		b.unk = id
	}
	pairs, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	b.merges = make(map[uint64]merge, len(pairs))
	for rank, p := range pairs {
		l, okl := m.Vocab[p[0]]
		r, okr := m.Vocab[p[1]]
		n, okn := m.Vocab[p[0]+p[1]]
		if !okl || !okr || !okn {
			return nil, fmt.Errorf("model.merges[%d] %q + %q: a token that is not in the vocab", rank, p[0], p[1])
		}
		if _, dup := b.merges[pairKey(l, r)]; !dup {
			b.merges[pairKey(l, r)] = merge{rank: rank, newID: n}
		}
	}
	return b, nil
}

// parseMerges reads the merge list in either of its spellings: "a b"
// strings, or [a, b] pairs (tokenizers ≥ 0.20, whose tokens may hold spaces).
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([][2]string, 0, len(strs))
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok || a == "" || b == "" {
				return nil, fmt.Errorf("model.merges[%d] %q: want two tokens separated by a space", i, s)
			}
			out = append(out, [2]string{a, b})
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, errors.New("model.merges: want a list of \"a b\" strings or of [a, b] pairs")
	}
	out := make([][2]string, 0, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 || p[0] == "" || p[1] == "" {
			return nil, fmt.Errorf("model.merges[%d]: want a pair of tokens", i)
		}
		out = append(out, [2]string{p[0], p[1]})
	}
	return out, nil
}

// symbol is one token of a piece being merged, in a linked list.
type symbol struct {
	id         int
	prev, next int // indexes, −1 at the ends
	gone       bool
}

// candidate is a merge that may apply at symbol pos and its successor.
type candidate struct {
	rank, pos, newID int
}

type candidates []candidate

func (c candidates) Len() int { return len(c) }
func (c candidates) Less(i, j int) bool {
	if c[i].rank != c[j].rank {
		return c[i].rank < c[j].rank
	}
	return c[i].pos < c[j].pos
}
func (c candidates) Swap(i, j int) { c[i], c[j] = c[j], c[i] }
func (c *candidates) Push(x any)   { *c = append(*c, x.(candidate)) }
func (c *candidates) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}

func (b *bpe) count(piece string) int {
	if b.ignoreMerges {
		if _, ok := b.vocab[piece]; ok {
			return 1
		}
	}
	syms := b.symbols(piece)
	if len(syms) < 2 {
		return len(syms)
	}
	var h candidates
	push := func(pos int) {
		nx := syms[pos].next
		if nx < 0 {
			return
		}
		if m, ok := b.merges[pairKey(syms[pos].id, syms[nx].id)]; ok {
			heap.Push(&h, candidate{rank: m.rank, pos: pos, newID: m.newID})
		}
	}
	for i := range syms {
		push(i)
	}
	n := len(syms)
	for h.Len() > 0 {
		c := heap.Pop(&h).(candidate)
		s := &syms[c.pos]
		if s.gone || s.next < 0 {
			continue
		}
		// The pair may have changed since the candidate was pushed.
		if m, ok := b.merges[pairKey(s.id, syms[s.next].id)]; !ok || m.newID != c.newID || m.rank != c.rank {
			continue
		}
		right := &syms[s.next]
		s.id = c.newID
		right.gone = true
		s.next = right.next
		if s.next >= 0 {
			syms[s.next].prev = c.pos
		}
		n--
		if s.prev >= 0 {
			push(s.prev)
		}
		push(c.pos)
	}
	return n
}

// symbols splits a piece into its initial symbols: one per character in
// the vocabulary; an unknown character becomes its bytes' <0xXX> tokens
// (byte fallback), the unknown token (fused with a preceding one when
// fuse_unk), or nothing when the model has no unknown token.
func (b *bpe) symbols(piece string) []symbol {
	syms := make([]symbol, 0, utf8.RuneCountInString(piece))
	add := func(id int) {
		i := len(syms)
		syms = append(syms, symbol{id: id, prev: i - 1, next: -1})
		if i > 0 {
			syms[i-1].next = i
		}
	}
	lastUnk := false
	for i := 0; i < len(piece); {
		_, size := utf8.DecodeRuneInString(piece[i:])
		ch := piece[i : i+size]
		i += size
		if id, ok := b.vocab[ch]; ok {
			add(id)
			lastUnk = false
			continue
		}
		if b.byteFallback {
			ids := make([]int, 0, len(ch))
			for j := 0; j < len(ch); j++ {
				if id, ok := b.vocab[fmt.Sprintf("<0x%02X>", ch[j])]; ok {
					ids = append(ids, id)
				}
			}
			if len(ids) == len(ch) {
				for _, id := range ids {
					add(id)
				}
				lastUnk = false
				continue
			}
		}
		if b.unk < 0 {
			continue
		}
		if b.fuseUnk && lastUnk {
			continue
		}
		add(b.unk)
		lastUnk = true
	}
	return syms
}
