package load

import (
	"container/heap"
	"time"
)

// timers is a Load's pending actions: a heap ordered by time, then by the
// order they were set, so that both drivers run them in the same order.
type timers struct {
	h   timerHeap
	seq uint64
}

type timer struct {
	at  time.Duration
	seq uint64
	fn  func(now time.Duration)
}

func (t *timers) add(at time.Duration, fn func(now time.Duration)) {
	heap.Push(&t.h, timer{at: at, seq: t.seq, fn: fn})
	t.seq++
}

// next returns the earliest timer's time.
func (t *timers) next() (time.Duration, bool) {
	if len(t.h) == 0 {
		return 0, false
	}
	return t.h[0].at, true
}

// pop removes the earliest timer and returns its action.
func (t *timers) pop() func(now time.Duration) { return heap.Pop(&t.h).(timer).fn }

type timerHeap []timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = timer{}
	*h = old[:len(old)-1]
	return x
}
