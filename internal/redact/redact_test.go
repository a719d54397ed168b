package redact

import "testing"

func TestRedactor(t *testing.T) {
	t.Parallel()
	x := New("sk-secret-key", "", "on", "tenant-7")
	for in, want := range map[string]string{
		"invalid api key: Bearer sk-secret-key":     "invalid api key: Bearer [REDACTED]",
		"tenant-7 is not allowed; on sk-secret-key": "[REDACTED] is not allowed; on [REDACTED]",
		"nothing here, on and off":                  "nothing here, on and off",
	} {
		if got := x.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	var none *Redactor
	if none.String("sk-secret-key") != "sk-secret-key" || New().String("x") != "x" {
		t.Error("a nil or empty Redactor changed text")
	}
}
