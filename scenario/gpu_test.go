package scenario

import (
	"strings"
	"testing"
)

// TestGPUSampler: scrape.gpu.sampler takes nvidia-smi or amd-smi; any
// other value, or two sources, is an error naming the field and the
// choices, at its line.
func TestGPUSampler(t *testing.T) {
	t.Parallel()
	base := "name: gpu\nload:\n  stages:\n    - {concurrency: 1, requests: 1}\nscrape:\n  gpu:\n"
	for _, s := range []string{SamplerNvidiaSMI, SamplerAMDSMI} {
		sc, err := Parse("gpu.yaml", []byte(base+"    sampler: "+s+"\n"))
		if err != nil {
			t.Fatalf("sampler %s: %v", s, err)
		}
		if sc.Scrape.GPU.Sampler != s {
			t.Errorf("sampler = %q, want %q", sc.Scrape.GPU.Sampler, s)
		}
	}
	for doc, want := range map[string]string{
		"    sampler: rocm-smi\n":                    `gpu.yaml:7: scrape.gpu.sampler: want nvidia-smi (NVIDIA GPUs) or amd-smi (AMD GPUs), got "rocm-smi"`,
		"    sampler: amd-smi\n    file: gpu.json\n": "scrape.gpu: give one source of GPU telemetry: url (or urls) of a DCGM exporter, sampler: nvidia-smi or amd-smi, or file: what one wrote",
	} {
		_, err := Parse("gpu.yaml", []byte(base+doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", doc, err, want)
		}
	}
}
