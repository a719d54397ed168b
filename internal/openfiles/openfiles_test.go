package openfiles

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	limit, ok := Limit()
	if !ok {
		t.Skip("the open-files limit is unknown on this system")
	}
	if err := Check(limit-margin, "streams"); err != nil {
		t.Errorf("a need within the limit (%d of %d): %v", limit-margin, limit, err)
	}
	err := Check(limit, "10 streams")
	if err == nil {
		t.Fatalf("a need of %d with a limit of %d passed", limit+margin, limit)
	}
	for _, want := range []string{"10 streams need about", group(limit), "ulimit -n"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}

func TestGroup(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 20064: "20,064", 1234567: "1,234,567"} {
		if got := group(n); got != want {
			t.Errorf("group(%d) = %q, want %q", n, got, want)
		}
	}
}
