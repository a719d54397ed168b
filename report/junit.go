package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// JUnit XML, the de-facto format CI systems (GitLab, Jenkins, GitHub
// actions' test reporters) read: one test suite per run, one test case
// per budget. A case's name is stable across runs ("ttft_ms.p99", in class
// "servebench.SCENARIO.SCOPE"), so CI can track a budget's history; the
// measure and limit are in the failure message and the case's output.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
	SystemErr  string          `xml:"system-err,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the verdict of s as JUnit XML. It fails when s has no
// verdict.
func WriteJUnit(w io.Writer, s *Summary) error {
	v := s.Verdict
	if v == nil {
		return fmt.Errorf("write junit: the summary has no verdict")
	}
	scenarioName := s.Title()
	if scenarioName == "" {
		scenarioName = "run"
	}
	suite := junitSuite{
		Name:     "servebench budgets: " + scenarioName,
		Tests:    len(v.Checks),
		Failures: v.Failed + v.Inconclusive,
		Time:     fmt.Sprintf("%.3f", s.Overall.Duration),
		Properties: []junitProperty{
			{"scenario", s.Scenario}, {"target", s.Target}, {"model", s.Model},
			{"version", s.Version}, {"budgets", budgetsSource(v)},
		},
		SystemErr: strings.Join(v.Warnings, "\n"),
	}
	if !s.Started.IsZero() {
		suite.Timestamp = s.Started.UTC().Format("2006-01-02T15:04:05")
	}
	for i := range v.Checks {
		c := &v.Checks[i]
		tc := junitCase{
			Name:      c.Metric + "." + c.Stat,
			Classname: "servebench." + xmlSafe(scenarioName) + "." + xmlSafe(c.Scope),
			Time:      "0",
			SystemOut: checkLine(c),
		}
		if !c.Pass {
			tc.Failure = &junitFailure{Message: checkLine(c), Type: "budget"}
			switch {
			case c.Measured == nil:
				tc.Failure.Type = "not_measured"
			case c.Status == StatusInconclusive:
				tc.Failure.Type = "inconclusive"
			}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	doc := junitSuites{Name: "servebench", Tests: suite.Tests, Failures: suite.Failures, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return nil
}

// budgetsSource names where a verdict's budgets came from.
func budgetsSource(v *Verdict) string {
	if v.Source == "" {
		return "the run's scenario"
	}
	return v.Source
}

// checkLine states a check in one sentence: "overall ttft_ms p99 = 2345.6
// ms, limit ≤ 2000 ms: over by 345.6 ms (17.3 %)".
func checkLine(c *Check) string {
	return fmt.Sprintf("%s %s %s = %s, limit %s %s: %s", c.Scope, c.Metric, c.Stat,
		formatValue(c.Measured, c.Unit), opSymbol(c.Op), formatNumber(c.Limit, c.Unit), marginText(c))
}

// xmlSafe keeps a class-name segment free of the dots that CI systems
// split class names on.
func xmlSafe(s string) string { return strings.ReplaceAll(s, ".", "_") }
