package load

import (
	"fmt"
	"time"

	"github.com/servebench/servebench/results"
)

// shapesFirst runs a stage's warmup shapes (stage.warmup.shapes) before
// the stage itself: one request of each prompt-length shape, one at a
// time, recorded as warmup and not counted in the stage's requests; the
// stage proper starts when the last one ended, its bounds counted from
// then.
type shapesFirst struct {
	Kind
	shapes []Content
	next   int  // the next shape to send
	busy   bool // a shape is in flight
	ran    bool // every shape ended: the stage proper runs
}

// withShapes wraps k when its stage asks for warmup shapes.
func withShapes(k Kind, t *template, warm bool) Kind {
	if !warm {
		return k
	}
	if t.p == nil { // describing a plan: the prompts are not built
		return &shapesFirst{Kind: k}
	}
	var shapes []Content
	for _, p := range t.p.Shapes() {
		shapes = append(shapes, Content{Prompt: p.Text, InputTokens: p.InputTokens, MaxTokens: p.OutputTokens, Exact: t.exact})
	}
	if len(shapes) == 0 {
		return k
	}
	return &shapesFirst{Kind: k, shapes: shapes}
}

// Describe implements Kind.
func (k *shapesFirst) Describe() string {
	if len(k.shapes) == 0 {
		return k.Kind.Describe() + ", after a warmup request of every prompt-length shape, one at a time"
	}
	return fmt.Sprintf("%s, after %d warmup requests of every prompt-length shape (%d to %d tokens), one at a time",
		k.Kind.Describe(), len(k.shapes), k.shapes[0].InputTokens, k.shapes[len(k.shapes)-1].InputTokens)
}

func (k *shapesFirst) start(s *stageRun) { k.send(s, s.start) }

// send sends the next shape, or starts the stage proper after the last.
func (k *shapesFirst) send(s *stageRun, now time.Duration) {
	if k.next >= len(k.shapes) {
		k.ran = true
		s.l.stageAt = now
		s.l.c.stageAt.Store(int64(now))
		k.Kind.start(&stageRun{l: s.l, idx: s.idx, start: now})
		return
	}
	c := k.shapes[k.next]
	k.next++
	k.busy = true
	r := &Request{Seq: s.l.claim(), Stage: s.idx, Warmup: true, Scheduled: now, shape: true}
	r.build = func() Content { return c }
	s.l.send(r)
}

func (k *shapesFirst) done(s *stageRun, now time.Duration, r *Request, res *results.Result, reply Reply) {
	if !r.shape {
		k.Kind.done(s, now, r, res, reply)
		return
	}
	k.busy = false
	k.send(s, now)
}

func (k *shapesFirst) exhausted() bool {
	if !k.ran {
		return false
	}
	return k.Kind.exhausted()
}
