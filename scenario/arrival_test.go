package scenario

import (
	"math"
	"testing"
	"time"
)

func TestScheduleNext(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	type step struct {
		elapsed time.Duration
		sent    uint64
		wait    time.Duration
		stop    bool
	}
	for _, tc := range []struct {
		name  string
		stage Stage
		steps []step
	}{
		{"constant 4/s", Stage{RatePerSec: 4, Arrival: ArrivalConstant, Requests: 3}, []step{
			{0, 0, 0, false},              // the first arrival is at the stage's start
			{10 * ms, 1, 240 * ms, false}, // the second 250 ms in
			{600 * ms, 2, 0, false},       // late: send at once
			{600 * ms, 3, 0, true},        // three requests sent: done
		}},
		{"constant bounded by duration", Stage{RatePerSec: 10, Arrival: ArrivalConstant, Duration: Duration(time.Second)}, []step{
			{0, 9, 900 * ms, false},
			{0, 10, 0, true}, // arrival 10 would be at 1 s, the end of the stage
		}},
		{"constant 0.5/s", Stage{RatePerSec: 0.5, Arrival: ArrivalConstant, Requests: 100}, []step{
			{3 * time.Second, 2, time.Second, false},
		}},
		{"count bound before duration", Stage{RatePerSec: 1000, Arrival: ArrivalPoisson, Requests: 5, Duration: Duration(time.Hour)}, []step{
			{0, 5, 0, true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := NewSchedule(&tc.stage, 1)
			for i, st := range tc.steps {
				wait, stop := s.Next(st.elapsed, st.sent)
				if wait != st.wait || stop != st.stop {
					t.Errorf("step %d: Next(%v, %d) = %v, %v; want %v, %v", i, st.elapsed, st.sent, wait, stop, st.wait, st.stop)
				}
			}
		})
	}
}

// TestScheduleStatistics checks the gaps' mean (1/rate) and coefficient of
// variation (1 for poisson, 1/sqrt(shape) for gamma, 0 for constant).
func TestScheduleStatistics(t *testing.T) {
	t.Parallel()
	const n = 50_000
	for _, tc := range []struct {
		name   string
		stage  Stage
		wantCV float64
	}{
		{"constant", Stage{RatePerSec: 50, Arrival: ArrivalConstant}, 0},
		{"poisson", Stage{RatePerSec: 50, Arrival: ArrivalPoisson}, 1},
		{"gamma 1 is poisson", Stage{RatePerSec: 50, Arrival: ArrivalGamma, Burstiness: 1}, 1},
		{"gamma bursty", Stage{RatePerSec: 50, Arrival: ArrivalGamma, Burstiness: 0.25}, 2},
		{"gamma regular", Stage{RatePerSec: 50, Arrival: ArrivalGamma, Burstiness: 4}, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := NewSchedule(&tc.stage, 42)
			var sum, sumSq float64
			prev := s.Offset(0)
			if prev != 0 {
				t.Fatalf("first offset %v, want 0", prev)
			}
			for i := uint64(1); i <= n; i++ {
				at := s.Offset(i)
				g := (at - prev).Seconds()
				if g < 0 {
					t.Fatalf("offset %d goes back: %v < %v", i, at, prev)
				}
				sum += g
				sumSq += g * g
				prev = at
			}
			mean := sum / n
			cv := math.Sqrt(max(sumSq/n-mean*mean, 0)) / mean
			if want := 1 / tc.stage.RatePerSec; math.Abs(mean-want)/want > 0.03 {
				t.Errorf("mean gap %.5fs, want %.5fs ± 3%%", mean, want)
			}
			if math.Abs(cv-tc.wantCV) > 0.05*math.Max(tc.wantCV, 0.1) {
				t.Errorf("gap CV %.3f, want %.3f ± 5%%", cv, tc.wantCV)
			}
		})
	}
}

func TestScheduleDeterministic(t *testing.T) {
	t.Parallel()
	st := Stage{RatePerSec: 20, Arrival: ArrivalGamma, Burstiness: 0.5}
	a, b, c := NewSchedule(&st, 7), NewSchedule(&st, 7), NewSchedule(&st, 8)
	want := a.Offset(1000)
	// Random access (going back restarts the walk) agrees with sequential.
	for _, i := range []uint64{1000, 3, 999, 1000} {
		got := b.Offset(i)
		if i == 1000 && got != want {
			t.Errorf("Offset(1000) = %v after random access, want %v", got, want)
		}
	}
	if c.Offset(1000) == want {
		t.Error("seeds 7 and 8 give the same schedule")
	}
}

func BenchmarkScheduleNext(b *testing.B) {
	s := NewSchedule(&Stage{RatePerSec: 1000, Arrival: ArrivalGamma, Burstiness: 0.5}, 1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Next(0, uint64(i))
	}
}
