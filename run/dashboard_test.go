package run

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"
	"time"
)

// TestGrafanaDashboard: deploy/grafana/servebench.json is a dashboard
// whose every query names only metrics the run's /metrics page serves, so
// a renamed metric breaks this test rather than a user's panel.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile("../deploy/grafana/servebench.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	served := map[string]bool{}
	p := newProgress(time.Now(), nil, liveSource{})
	for _, mf := range p.families(metricsInfo{}) {
		served[mf.GetName()] = true
	}
	served["servebench_request_errors_total"] = true // served once a request failed
	name := regexp.MustCompile(`servebench_[a-z_]+`)
	queries := 0
	for _, pn := range dash.Panels {
		for _, tg := range pn.Targets {
			queries++
			for _, m := range name.FindAllString(tg.Expr, -1) {
				if !served[m] {
					t.Errorf("panel %q queries %s, which /metrics does not serve", pn.Title, m)
				}
			}
		}
	}
	if queries < 5 {
		t.Errorf("the dashboard has %d queries", queries)
	}
}
