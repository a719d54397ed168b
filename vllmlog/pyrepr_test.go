package vllmlog

import (
	"slices"
	"testing"
)

func TestPyDict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     []item
	}{
		{"seed 000", "{'host': '0.0.0.0', 'model': '/kaggle/m', 'max_model_len': 98304, 'served_model_name': ['vllm-model'], 'gpu_memory_utilization': 0.96, 'max_num_seqs': 6}",
			[]item{{"host", "'0.0.0.0'"}, {"model", "'/kaggle/m'"}, {"max_model_len", "98304"}, {"served_model_name", "['vllm-model']"}, {"gpu_memory_utilization", "0.96"}, {"max_num_seqs", "6"}}},
		{"nested and enums", "{'a': {'b': [1, 2]}, 'mode': <CompilationMode.VLLM_COMPILE: 3>, 's': 'x, y: z'}",
			[]item{{"a", "{'b': [1, 2]}"}, {"mode", "<CompilationMode.VLLM_COMPILE: 3>"}, {"s", "'x, y: z'"}}},
		{"cut short", "{'a': 1, 'b': [1, 2", []item{{"a", "1"}, {"b", "[1, 2"}}},
		{"not a dict", "[1, 2]", nil},
	} {
		if got := pyDict(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%s: pyDict = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestPyKeywords(t *testing.T) {
	t.Parallel()
	in := "model='/m', dtype=torch.bfloat16, compilation_config={'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'cudagraph_capture_sizes': [1, 2, 4]}, enforce_eager=False"
	got := pyKeywords(in)
	want := []item{{"model", "'/m'"}, {"dtype", "torch.bfloat16"}, {"compilation_config", "{'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'cudagraph_capture_sizes': [1, 2, 4]}"}, {"enforce_eager", "False"}}
	if !slices.Equal(got, want) {
		t.Fatalf("pyKeywords = %q", got)
	}
	var c Config
	applyEngineConfig(&c, got)
	if c.Dtype != "bfloat16" || c.CUDAGraphMode != "FULL_AND_PIECEWISE" || !slices.Equal(c.CaptureSizes, []int{1, 2, 4}) || c.EnforceEager == nil || *c.EnforceEager {
		t.Errorf("config: %+v", c)
	}
}

func TestPyValues(t *testing.T) {
	t.Parallel()
	if s := pyString(`'it\'s'`); s != "it's" {
		t.Errorf("pyString = %q", s)
	}
	if n, ok := pyInt("8192.0"); !ok || n != 8192 {
		t.Errorf("pyInt = %d, %v", n, ok)
	}
	if _, ok := pyInt("None"); ok {
		t.Error("pyInt(None) ok")
	}
	if l := pyList("(2, 1)"); !slices.Equal(l, []string{"2", "1"}) {
		t.Errorf("pyList = %q", l)
	}
	if e := pyEnum("<CompilationMode.NONE: 0>"); e != "NONE" {
		t.Errorf("pyEnum = %q", e)
	}
}
