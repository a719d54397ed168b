package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/servebench/servebench/internal/inputfile"
)

// This file reads a Hugging Face tokenizer.json and counts tokens with it.
//
// No pure-Go library was usable: github.com/sugarme/tokenizer (v0.3.0)
// compiles the pre-tokenizer patterns with Go's regexp, which has no
// lookahead, and panics on the `\s+(?!\S)` every current model's file
// holds (Qwen3, Llama 3.1, DeepSeek-V3 and gpt-oss alike); tiktoken-go
// reads tiktoken rank files, not tokenizer.json, and merges by the rank of
// the merged piece rather than by the file's merge list. So this is a small
// reader of the two models LLM servers use for counting, BPE (byte-level
// or character-level, with byte fallback) and WordLevel, with the
// normalizers and pre-tokenizers those files use. Patterns are compiled
// with github.com/dlclark/regexp2 (already in the module graph through
// tiktoken-go), which has the lookaheads. Its counts were checked against
// Hugging Face's own tokenizers library (its Rust core) on those four
// files; see docs/scenarios.md, "Tokenizers", for the figures.

// maxTokenizerBytes bounds a tokenizer.json (Qwen3's is 11 MB, gpt-oss's 28 MB).
const maxTokenizerBytes = 256 << 20

// hfFile is the part of tokenizer.json counting needs. Truncation, padding,
// the post-processor (BOS/EOS templates) and the decoder do not change the
// number of tokens in a text: a server adds its special tokens and chat
// template around it, and the run measures that separately.
type hfFile struct {
	AddedTokens  []hfAddedToken  `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        hfModel         `json:"model"`
}

type hfAddedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
}

type hfModel struct {
	Type                    string          `json:"type"`
	Vocab                   map[string]int  `json:"-"` // decoded once the type is known (Unigram's is a list)
	RawVocab                json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
}

// hfTokenizer counts tokens as a Hugging Face tokenizer.json says. It is
// immutable after loading except for its piece cache, and safe for
// concurrent use.
type hfTokenizer struct {
	added     map[byte][]string // added tokens' contents by first byte, longest first: each is one token where it appears
	normalize func(string) string
	pretok    []preTokenizer
	byteLevel bool // pieces are mapped byte by byte to the GPT-2 alphabet before the model
	model     pieceModel
	vocab     map[string]int // the model's vocabulary (for vocabWords)
	wordLevel bool

	cache     sync.Map // piece → token count
	cacheSize atomic.Int64
}

// pieceModel counts the tokens of one pre-tokenized piece.
type pieceModel interface {
	count(piece string) int
}

// maxCachedPieces bounds the piece cache: pieces of natural text repeat,
// and a crafted text of distinct pieces must not grow it without bound.
const maxCachedPieces = 1 << 17

// loadHF reads a tokenizer.json file.
func loadHF(path string) (*hfTokenizer, error) {
	data, err := inputfile.ReadFile(path, inputfile.Limit{What: "tokenizer.json", MaxBytes: maxTokenizerBytes})
	if errors.Is(err, inputfile.ErrTooLarge) {
		return nil, fmt.Errorf("larger than %d MB: not a tokenizer.json", maxTokenizerBytes>>20)
	}
	if err != nil {
		return nil, err
	}
	return parseHF(data)
}

// parseHF builds a tokenizer from the contents of a tokenizer.json.
func parseHF(data []byte) (*hfTokenizer, error) {
	var file hfFile
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %s", jsonProblem(err))
	}
	t := &hfTokenizer{}
	var err error
	if t.normalize, err = parseNormalizer(file.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	if t.pretok, t.byteLevel, err = parsePreTokenizer(file.PreTokenizer, "pre_tokenizer"); err != nil {
		return nil, err
	}
	m := &file.Model
	switch m.Type {
	case "BPE", "", "WordLevel":
		if len(m.RawVocab) > 0 && json.Unmarshal(m.RawVocab, &m.Vocab) != nil {
			return nil, errors.New("model.vocab: want an object of token → id")
		}
	}
	switch m.Type {
	case "BPE", "":
		if len(m.Vocab) == 0 {
			return nil, errors.New("model: the BPE vocab is empty")
		}
		t.model, err = newBPE(m, t.byteLevel)
	case "WordLevel":
		if len(m.Vocab) == 0 {
			return nil, errors.New("model: the WordLevel vocab is empty")
		}
		t.model, t.wordLevel = wordLevel{}, true
	default:
		return nil, fmt.Errorf("model.type %q is not supported (BPE and WordLevel are)", m.Type)
	}
	if err != nil {
		return nil, err
	}
	t.vocab = m.Vocab
	t.added = map[byte][]string{}
	for _, a := range file.AddedTokens {
		if a.Content != "" && !slices.Contains(t.added[a.Content[0]], a.Content) {
			t.added[a.Content[0]] = append(t.added[a.Content[0]], a.Content)
		}
	}
	for _, list := range t.added {
		slices.SortStableFunc(list, func(a, b string) int { return len(b) - len(a) })
	}
	return t, nil
}

// jsonProblem says what is wrong with a JSON document without the Go
// types encoding/json names.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("%s (at byte %d)", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("%s: want %s, got %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names a Go kind as the JSON value it decodes from.
func jsonKind(kind string) string {
	switch kind {
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "a list"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	return "a number"
}

// count returns the number of tokens in text, without the special tokens a
// post-processor would add (add_special_tokens=false).
func (t *hfTokenizer) count(text string) int {
	n := 0
	for len(text) > 0 {
		i, tok := t.nextAdded(text)
		if i < 0 {
			return n + t.countPlain(text)
		}
		n += t.countPlain(text[:i]) + 1
		text = text[i+len(tok):]
	}
	return n
}

// nextAdded finds the first added token in text (the longest at that
// position): its byte offset and content, or −1.
func (t *hfTokenizer) nextAdded(text string) (int, string) {
	if len(t.added) == 0 {
		return -1, ""
	}
	for i := 0; i < len(text); i++ {
		for _, a := range t.added[text[i]] {
			if strings.HasPrefix(text[i:], a) {
				return i, a
			}
		}
	}
	return -1, ""
}

// countPlain counts a text free of added tokens: normalize, pre-tokenize,
// then run the model on every piece.
func (t *hfTokenizer) countPlain(text string) int {
	if text == "" {
		return 0
	}
	text = t.normalize(text)
	pieces := []string{text}
	for _, p := range t.pretok {
		pieces = p.split(pieces)
	}
	n := 0
	for _, p := range pieces {
		if p == "" {
			continue
		}
		n += t.countPiece(p)
	}
	return n
}

func (t *hfTokenizer) countPiece(p string) int {
	if v, ok := t.cache.Load(p); ok {
		return v.(int)
	}
	q := p
	if t.byteLevel {
		q = byteLevelMap(p)
	}
	c := t.model.count(q)
	if t.cacheSize.Load() < maxCachedPieces {
		if _, loaded := t.cache.LoadOrStore(p, c); !loaded {
			t.cacheSize.Add(1)
		}
	}
	return c
}

// wordLevel is the WordLevel model: every piece is one token, the word's
// or the unknown token's (a file without unk_token makes Hugging Face fail
// on an unknown word; it counts one here).
type wordLevel struct{}

func (wordLevel) count(string) int { return 1 }

// byteToRune is GPT-2's byte-level alphabet: printable bytes stand for
// themselves, the others are shifted to U+0100 onwards (space is "Ġ").
var byteToRune = func() [256]rune {
	var m [256]rune
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = rune(b)
			continue
		}
		m[b] = rune(256 + n)
		n++
	}
	return m
}()

// byteLevelMap spells s's UTF-8 bytes in the byte-level alphabet.
func byteLevelMap(s string) string {
	var b strings.Builder
	b.Grow(len(s) * 2)
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteToRune[s[i]])
	}
	return b.String()
}

// maxVocabWords bounds the candidates vocabWords returns.
const maxVocabWords = 4096

// vocabWords returns the tokenizer's own whole words, for a vocabulary too
// small for the common-word list: the vocabulary's entries that are a
// word-start marker (a byte-level space "Ġ", SentencePiece's "▁", or
// nothing in a WordLevel model) and two or more lowercase ASCII letters, in
// id order (a BPE vocabulary's earliest merges are its commonest pieces).
func (t *hfTokenizer) vocabWords() []string {
	type cand struct {
		word string
		id   int
	}
	var cs []cand
	for tok, id := range t.vocab {
		w := tok
		switch {
		case strings.HasPrefix(tok, "Ġ"):
			w = strings.TrimPrefix(tok, "Ġ")
		case strings.HasPrefix(tok, "▁"):
			w = strings.TrimPrefix(tok, "▁")
		case !t.wordLevel:
			continue
		}
		if len(w) >= 2 && strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" {
			cs = append(cs, cand{w, id})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.id != b.id {
			return a.id - b.id
		}
		return strings.Compare(a.word, b.word)
	})
	out := make([]string, 0, min(len(cs), maxVocabWords))
	for _, c := range cs[:min(len(cs), maxVocabWords)] {
		out = append(out, c.word)
	}
	return out
}
