package results

import (
	"bytes"
	"testing"
	"time"
)

// TestPrepareWritesTheSameBytes: a request record whose chunk arrays were
// encoded by Prepare (in another goroutine) is written byte for byte as
// Write alone writes it, and its buffer is reused for the next.
func TestPrepareWritesTheSameBytes(t *testing.T) {
	t.Parallel()
	mk := func(seq uint64) *Result {
		r := &Result{Seq: seq, Outcome: OK, API: APIChat, Stream: true, OutputTokens: 3, FirstToken: time.Millisecond}
		r.ChunkTimes = []time.Duration{time.Millisecond, 2 * time.Millisecond, 3*time.Millisecond + 7}
		r.ChunkTokens = []int32{1, 1, 1}
		return r
	}
	var plain, prepared bytes.Buffer
	wp, wq := NewWriter(&plain), NewWriter(&prepared)
	for seq := range uint64(3) {
		if err := wp.Write(ResultRecord(mk(seq))); err != nil {
			t.Fatal(err)
		}
		rec := ResultRecord(mk(seq))
		done := make(chan struct{})
		go func() { wq.Prepare(&rec); close(done) }()
		<-done
		if rec.chunks == nil {
			t.Fatal("Prepare encoded nothing")
		}
		if err := wq.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(plain.Bytes(), prepared.Bytes()) {
		t.Errorf("prepared records differ:\n%s\nwant\n%s", prepared.Bytes(), plain.Bytes())
	}
	rd := NewReader(bytes.NewReader(prepared.Bytes()), "prepared")
	n := 0
	for rd.Scan() {
		if r := rd.Record().Result; r == nil || len(r.ChunkTimes) != 3 || r.ChunkTimes[2] != 3*time.Millisecond+7 {
			t.Errorf("record %d read back as %+v", n, r)
		}
		n++
	}
	if n != 3 || rd.Err() != nil {
		t.Errorf("read back %d records: %v", n, rd.Err())
	}
}
