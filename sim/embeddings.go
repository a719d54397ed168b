package sim

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"
)

// maxEmbeddingDims bounds Config.EmbeddingDims (and a request's
// "dimensions").
const maxEmbeddingDims = 16384

// maxEmbeddingInputs bounds the inputs of one embeddings request.
const maxEmbeddingInputs = 2048

// embeddingRequest is the part of an OpenAI embeddings request the
// simulator reads.
type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     *int            `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
}

// embeddingInputs resolves the input to one token-ID list per text: a string, an
// array of strings, an array of token IDs or an array of such arrays.
func (s *Server) embeddingInputs(raw json.RawMessage) ([][]uint32, error) {
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return [][]uint32{promptIDs(s.tok, one)}, nil
	}
	var texts []string
	if err := json.Unmarshal(raw, &texts); err == nil && len(texts) > 0 {
		out := make([][]uint32, len(texts))
		for i, t := range texts {
			out[i] = promptIDs(s.tok, t)
		}
		return out, nil
	}
	var ids []uint32
	if err := json.Unmarshal(raw, &ids); err == nil && len(ids) > 0 {
		return [][]uint32{ids}, nil
	}
	var idss [][]uint32
	if err := json.Unmarshal(raw, &idss); err == nil && len(idss) > 0 {
		return idss, nil
	}
	return nil, badRequest("input", "input must be a string, an array of strings, an array of token IDs or an array of such arrays")
}

// embeddings serves /v1/embeddings as vLLM serves a pooling model: each
// input is one engine request that ends once its prompt is prefilled
// (queueing, batching and prefix caching as for generation), and the
// response, once every input is done, holds one vector per input and the
// prompt tokens in usage. Vectors are unit-length and a pure function of
// the input's tokens. The simulator embeds with any preset (a real vLLM
// serves embeddings only for a pooling model).
func (s *Server) embeddings(w http.ResponseWriter, hr *http.Request) {
	inputs, dims, prompt, err := s.embeddingBody(hr)
	if err != nil {
		writeError(w, err)
		return
	}
	id := "embd-" + s.newID()
	reqs, streams, err := s.submitInputs(id, inputs)
	if err != nil {
		writeError(w, err)
		return
	}
	for i, st := range streams {
		if err := s.waitFinished(hr.Context(), st); err != nil {
			s.mu.Lock()
			for _, r := range reqs[i:] {
				s.engine.Abort(r)
			}
			s.mu.Unlock()
			return
		}
	}
	b := make([]byte, 0, 64+len(inputs)*(dims*12+48))
	b = append(b, `{"id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"object":"list","created":`...)
	b = strconv.AppendInt(b, time.Now().Unix(), 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, s.cfg.ServedModelName)
	b = append(b, `,"data":[`...)
	for i, ids := range inputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"object":"embedding","embedding":`...)
		b = appendVector(b, ids, dims)
		b = append(b, '}')
	}
	b = append(b, `],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":0,"prompt_tokens_details":null}}`+"\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// embeddingBody reads an embeddings request: its inputs as token IDs (an
// empty one as the BOS token), the vector size and the prompt tokens in
// all; or the error the server answers.
func (s *Server) embeddingBody(hr *http.Request) (inputs [][]uint32, dims, prompt int, err error) {
	var req embeddingRequest
	if err := json.NewDecoder(io.LimitReader(hr.Body, maxBodyBytes)).Decode(&req); err != nil {
		return nil, 0, 0, badRequest("", "invalid JSON body: %v", err)
	}
	if req.Model != "" && req.Model != s.cfg.ServedModelName {
		return nil, 0, 0, s.notFound(req.Model)
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" {
		return nil, 0, 0, badRequest("encoding_format", "the simulator answers encoding_format float only, got %q", req.EncodingFormat)
	}
	dims = s.cfg.EmbeddingDims
	if d := req.Dimensions; d != nil {
		if *d < 1 || *d > dims {
			return nil, 0, 0, badRequest("dimensions", "dimensions must be in [1, %d], got %d", dims, *d)
		}
		dims = *d
	}
	if inputs, err = s.embeddingInputs(req.Input); err != nil {
		return nil, 0, 0, err
	}
	if len(inputs) > maxEmbeddingInputs {
		return nil, 0, 0, badRequest("input", "at most %d inputs per request, got %d", maxEmbeddingInputs, len(inputs))
	}
	for i, ids := range inputs {
		if len(ids) == 0 {
			inputs[i] = []uint32{0}
		}
		if err := validateLengths(s.cfg.MaxModelLen, len(inputs[i]), 0); err != nil {
			return nil, 0, 0, err
		}
		prompt += len(inputs[i])
	}
	return inputs, dims, prompt, nil
}

// submitInputs submits one pooling request per input to the engine, all
// or none, and wakes the engine's loop.
func (s *Server) submitInputs(id string, inputs [][]uint32) ([]*Request, []*stream, error) {
	reqs := make([]*Request, len(inputs))
	streams := make([]*stream, len(inputs))
	var err error
	s.mu.Lock()
	for i, ids := range inputs {
		streams[i] = &stream{notify: make(chan struct{}, 1)}
		reqs[i] = &Request{ID: id + "-" + strconv.Itoa(i), Prompt: ids, MaxTokens: 1, IgnoreEOS: true, Pooling: true, sink: streams[i]}
		if err = s.engine.Submit(reqs[i]); err != nil {
			break
		}
	}
	if err != nil {
		for _, r := range reqs {
			if r != nil {
				s.engine.Abort(r)
			}
		}
	}
	s.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return reqs, streams, nil
}

// waitFinished waits until the engine finished the request st belongs to.
func (s *Server) waitFinished(ctx context.Context, st *stream) error {
	for {
		s.mu.Lock()
		fin := st.finish
		s.mu.Unlock()
		if fin != "" {
			return nil
		}
		select {
		case <-st.notify:
		case <-ctx.Done():
			return errClientGone
		case <-s.ctx.Done():
			return errClientGone
		}
	}
}

// appendVector appends a unit vector of dims components derived from the
// token IDs: equal inputs get equal vectors.
func appendVector(b []byte, ids []uint32, dims int) []byte {
	h := uint64(len(ids))
	for _, id := range ids {
		h = mix64(h ^ uint64(id))
	}
	v := make([]float64, dims)
	var norm float64
	for i := range v {
		h = mix64(h + 0x9e3779b97f4a7c15)
		v[i] = float64(int64(h>>11))/float64(1<<52) - 1
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		norm = 1
	}
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, x/norm, 'g', 7, 32)
	}
	return append(b, ']')
}
