package report

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/scrape"
)

// FromFiles reads one or more results files into a new Aggregate. Each
// file's offsets count from its own epoch; with several files, they are
// shifted onto the earliest epoch (by the headers' wall-clock start times)
// so that the merged stages span the right interval. Reader warnings (a
// truncated last line) become summary warnings. Records of other kinds
// (scrape samples) are passed to other, which may be nil.
func FromFiles(paths []string, other func(file int, shift time.Duration, kind string, raw []byte)) (*Aggregate, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no results files")
	}
	headers := make([]*client.Header, len(paths))
	for i, p := range paths {
		h, err := readHeader(p)
		if err != nil {
			return nil, err
		}
		headers[i] = h
	}
	epoch := headers[0].Started
	for _, h := range headers[1:] {
		if h.Started.Before(epoch) {
			epoch = h.Started
		}
	}
	a := New()
	for i, p := range paths {
		a.AddHeader(headers[i])
		shift := headers[i].Started.Sub(epoch)
		if err := a.addFile(i, p, shift, other); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func readHeader(path string) (*client.Header, error) {
	r, err := client.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if !r.Scan() {
		if r.Err() != nil {
			return nil, r.Err()
		}
		return nil, fmt.Errorf("%s: empty results file", path)
	}
	if r.Kind() != client.KindHeader {
		return nil, fmt.Errorf("%s:1: first record is %q, want a %q record", path, r.Kind(), client.KindHeader)
	}
	h := r.Header()
	if h.Schema > client.Schema {
		return nil, fmt.Errorf("%s: results schema %d is newer than this tool's (%d): upgrade servebench", path, h.Schema, client.Schema)
	}
	return h, nil
}

func (a *Aggregate) addFile(i int, path string, shift time.Duration, other func(int, time.Duration, string, []byte)) error {
	r, err := client.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	for r.Scan() {
		switch r.Kind() {
		case client.KindHeader:
		case client.KindWarning:
			var w client.Warning
			if err := json.Unmarshal(r.Raw(), &w); err != nil {
				return fmt.Errorf("%s:%d: warning record: %w", path, r.Line(), err)
			}
			a.Warn(w.Source + ": " + w.Message)
		case client.KindRequest:
			res := r.Result()
			if shift != 0 {
				shiftResult(res, shift)
			}
			a.Add(res)
		case client.KindScrape:
			s, err := scrape.DecodeSample(r.Raw())
			if err != nil {
				return fmt.Errorf("%s:%d: %w", path, r.Line(), err)
			}
			if shift != 0 {
				s.Start += shift
				s.At += shift
			}
			a.AddSample(s)
			if other != nil {
				other(i, shift, r.Kind(), r.Raw())
			}
		default:
			if other != nil {
				other(i, shift, r.Kind(), r.Raw())
			}
		}
	}
	for _, w := range r.Warnings() {
		a.Warn(w.Error())
	}
	return r.Err()
}

// shiftResult moves a record's epoch-relative offsets later by d. Chunk
// times are relative to Sent and do not move.
func shiftResult(r *client.Result, d time.Duration) {
	for _, t := range []*time.Duration{&r.Scheduled, &r.Sent, &r.Headers, &r.FirstToken,
		&r.FirstContent, &r.LastToken, &r.End} {
		if *t != 0 {
			*t += d
		}
	}
}
