package suggest

import "testing"

func TestClosest(t *testing.T) {
	known := []string{"max_num_seqs", "max_num_batched_tokens", "max_model_len", "concurrency"}
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{
		{"max_num_seq", "max_num_seqs", true},
		{"MAX_MODEL_LEN", "max_model_len", true},
		{"concurency", "concurrency", true},
		{"block_size", "", false},
	} {
		got, ok := Closest(tc.name, known)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if d := distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance(kitten, sitting) = %d, want 3", d)
	}
}
