package chart

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/internal/atomicfile"
	"github.com/servebench/servebench/vllmlog"
)

// WriteLogFiles writes into dir a log reading's JSON report
// (vllmlog.FileJSON) and, for every
// server start, startup.png/.svg (where start-up time went) and, when the
// log holds a stretch of steady decoding, decay.png/.svg (generation
// throughput against the context in flight, with the fitted law). With
// several server starts the plots' names begin with "run-N-". It returns
// the paths written.
func WriteLogFiles(dir string, rep *vllmlog.Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	var written []string
	path := filepath.Join(dir, vllmlog.FileJSON)
	if err := atomicfile.Write(path, func(w io.Writer) error { return vllmlog.Write(w, rep, "json") }); err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	written = append(written, path)
	for i, r := range rep.Runs {
		prefix := ""
		if len(rep.Runs) > 1 {
			prefix = fmt.Sprintf("run-%d-", i+1)
		}
		var figs []namedFigure
		if sp := vllmlog.StartupFigure(r); sp != nil {
			figs = append(figs, namedFigure{"startup", func() ([]byte, []byte, error) { return RenderStartup(sp) }})
		}
		if dp := vllmlog.DecayFigure(r); dp != nil {
			figs = append(figs, namedFigure{"decay", func() ([]byte, []byte, error) { return RenderLogDecay(dp) }})
		}
		for _, f := range figs {
			png, svg, err := f.render()
			if err != nil {
				return written, fmt.Errorf("logs: %w", err)
			}
			for _, out := range []struct {
				ext  string
				data []byte
			}{{".png", png}, {".svg", svg}} {
				p := filepath.Join(dir, prefix+f.name+out.ext)
				if err := atomicfile.WriteBytes(p, out.data); err != nil {
					return written, fmt.Errorf("logs: %w", err)
				}
				written = append(written, p)
			}
		}
	}
	return written, nil
}

// namedFigure is a plot and the file name it is written under.
type namedFigure struct {
	name   string
	render func() (pngData, svgData []byte, err error)
}
