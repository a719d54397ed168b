package textable

import "testing"

func TestFormat(t *testing.T) {
	rows := [][]string{{"value", "TTFT", "note"}, {"concurrency=4", "7.5", "passed"}, {"c=12", "14.25", "FAIL: over"}}
	want := "value           TTFT        note\n" +
		"concurrency=4    7.5      passed\n" +
		"c=12           14.25  FAIL: over\n"
	if got := Format(rows, false); got != want {
		t.Errorf("Format:\n%s\nwant:\n%s", got, want)
	}
	want = "value           TTFT  note\n" +
		"concurrency=4    7.5  passed\n" +
		"c=12           14.25  FAIL: over\n"
	if got := Format(rows, true); got != want {
		t.Errorf("Format with the last as is:\n%s\nwant:\n%s", got, want)
	}
	if Format(nil, false) != "" {
		t.Error("no rows gave text")
	}
}
