package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/servebench/servebench/scenario"
)

// The parts of Kubernetes objects the manifests test reads.
type (
	k8sObject struct {
		Kind     string                `yaml:"kind"`
		Metadata struct{ Name string } `yaml:"metadata"`
		Data     map[string]string     `yaml:"data"`
		Spec     struct {
			k8sPodSpec     `yaml:",inline"` // a Pod's
			CompletionMode string           `yaml:"completionMode"`
			Completions    *int             `yaml:"completions"`
			Parallelism    *int             `yaml:"parallelism"`
			BackoffLimit   *int             `yaml:"backoffLimit"`
			Template       struct {
				Spec k8sPodSpec `yaml:"spec"`
			} `yaml:"template"`
			// A NetworkPolicy's.
			PodSelector k8sSelector `yaml:"podSelector"`
			PolicyTypes []string    `yaml:"policyTypes"`
			Ingress     []any       `yaml:"ingress"`
			Egress      []struct {
				To []struct {
					PodSelector       *k8sSelector `yaml:"podSelector"`
					NamespaceSelector *k8sSelector `yaml:"namespaceSelector"`
				} `yaml:"to"`
				Ports []struct {
					Protocol string `yaml:"protocol"`
					Port     int    `yaml:"port"`
				} `yaml:"ports"`
			} `yaml:"egress"`
		} `yaml:"spec"`
		// A Kustomization's.
		Images []struct {
			Name    string `yaml:"name"`
			NewName string `yaml:"newName"`
			NewTag  string `yaml:"newTag"`
			Digest  string `yaml:"digest"`
		} `yaml:"images"`
	}
	k8sSelector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	k8sPodSpec struct {
		AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
		SecurityContext              struct {
			SeccompProfile *struct {
				Type string `yaml:"type"`
			} `yaml:"seccompProfile"`
		} `yaml:"securityContext"`
		InitContainers []k8sContainer `yaml:"initContainers"`
		Containers     []k8sContainer `yaml:"containers"`
		Volumes        []struct {
			Name      string `yaml:"name"`
			ConfigMap *struct {
				Name string `yaml:"name"`
			} `yaml:"configMap"`
			PVC *struct {
				ClaimName string `yaml:"claimName"`
			} `yaml:"persistentVolumeClaim"`
		} `yaml:"volumes"`
	}
	k8sContainer struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Env     []struct {
			Name      string `yaml:"name"`
			ValueFrom struct {
				FieldRef *struct {
					FieldPath string `yaml:"fieldPath"`
				} `yaml:"fieldRef"`
				ConfigMapKeyRef *struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"configMapKeyRef"`
				SecretKeyRef *struct {
					Name     string `yaml:"name"`
					Key      string `yaml:"key"`
					Optional bool   `yaml:"optional"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
)

// flag returns the value after name in args, or "".
func (c *k8sContainer) flag(name string) string {
	args := append(slices.Clone(c.Command), c.Args...)
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// mount returns where the volume is mounted, or "".
func (c *k8sContainer) mount(volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath
		}
	}
	return ""
}

// env says where an environment variable comes from: "field:PATH",
// "configmap:NAME/KEY", or "".
func (c *k8sContainer) env(name string) string {
	for _, e := range c.Env {
		switch {
		case e.Name != name:
		case e.ValueFrom.FieldRef != nil:
			return "field:" + e.ValueFrom.FieldRef.FieldPath
		case e.ValueFrom.ConfigMapKeyRef != nil:
			return "configmap:" + e.ValueFrom.ConfigMapKeyRef.Name + "/" + e.ValueFrom.ConfigMapKeyRef.Key
		case e.ValueFrom.SecretKeyRef != nil:
			return "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	return ""
}

// volumeSource names what backs a pod's volume: "configmap:NAME", "pvc:NAME".
func (p *k8sPodSpec) volumeSource(name string) string {
	for _, v := range p.Volumes {
		switch {
		case v.Name != name:
		case v.ConfigMap != nil:
			return "configmap:" + v.ConfigMap.Name
		case v.PVC != nil:
			return "pvc:" + v.PVC.ClaimName
		}
	}
	return ""
}

func readManifests(t *testing.T, dir string) map[string]*k8sObject {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", dir, err)
	}
	objs := map[string]*k8sObject{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var o k8sObject
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.Kind == "" {
				continue
			}
			objs[o.Kind+"/"+o.Metadata.Name] = &o
		}
	}
	return objs
}

// TestKubernetesManifests checks deploy/kubernetes the way a reviewer
// would, without a cluster: an Indexed Job of N shards whose completion
// index is the shard index and whose pods start together, read the
// scenario from the ConfigMap, write to the results volume and reach a
// remote Service; a merge Job that waits for the N shards' outputs and
// merges them from the same volume; and a scenario that N shards can split.
func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	objs := readManifests(t, "../../../deploy/kubernetes")
	shards, merge := objs["Job/servebench-shards"], objs["Job/servebench-merge"]
	if shards == nil || merge == nil {
		t.Fatalf("want the Jobs servebench-shards and servebench-merge; have %v", slices.Sorted(maps.Keys(objs)))
	}

	// The shards: an Indexed Job, completions = parallelism = N.
	s := &shards.Spec
	if s.CompletionMode != "Indexed" || s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism {
		t.Fatalf("shards Job: completionMode %q, completions %s, parallelism %s: want Indexed with completions = parallelism",
			s.CompletionMode, intText(s.Completions), intText(s.Parallelism))
	}
	n := *s.Completions
	if s.BackoffLimit == nil || *s.BackoffLimit != 0 {
		t.Error("a failed shard must not be retried later (backoffLimit: 0): its load would not line up with the others'")
	}
	pod := &s.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("shard pods have %d containers, want 1", len(pod.Containers))
	}
	c := &pod.Containers[0]
	args := append(slices.Clone(c.Command), c.Args...)
	if len(args) < 2 || args[0] != "run" {
		t.Fatalf("shard pods run %q, want bench run", args)
	}
	if got, want := c.flag("--shard"), "$(JOB_COMPLETION_INDEX)/"+strconv.Itoa(n); got != want {
		t.Errorf("--shard %q, want %q", got, want)
	}
	if got := c.env("JOB_COMPLETION_INDEX"); got != "field:metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("JOB_COMPLETION_INDEX comes from %q, want the completion-index annotation", got)
	}
	startVar := strings.TrimSuffix(strings.TrimPrefix(c.flag("--start-at"), "$("), ")")
	if startVar == "" || c.env(startVar) == "" {
		t.Errorf("--start-at %q is not an environment variable the pod defines", c.flag("--start-at"))
	}
	if !slices.Contains(args, "--allow-remote") {
		t.Error("the shards reach the server through a Service: they need --allow-remote")
	}
	if k := c.flag("--scrape-shard"); k != "" {
		if i, err := strconv.Atoi(k); err != nil || i < 0 || i >= n {
			t.Errorf("--scrape-shard %q is not a shard of %d", k, n)
		}
	}

	// The scenario, from the ConfigMap.
	scenarioMount := c.mount("scenario")
	src := pod.volumeSource("scenario")
	if scenarioMount == "" || !strings.HasPrefix(src, "configmap:") {
		t.Fatalf("the scenario volume is %q mounted at %q: want a ConfigMap", src, scenarioMount)
	}
	cm := objs["ConfigMap/"+strings.TrimPrefix(src, "configmap:")]
	key, ok := strings.CutPrefix(args[1], scenarioMount+"/")
	if cm == nil || !ok || cm.Data[key] == "" {
		t.Fatalf("the scenario %s is not a key of the ConfigMap %s mounted at %s", args[1], src, scenarioMount)
	}
	sc, err := scenario.Parse("ConfigMap "+key, []byte(cm.Data[key]))
	if err != nil {
		t.Fatalf("the ConfigMap's scenario: %v", err)
	}
	if err := (scenario.Shard{Index: 0, Count: n}).Check(sc); err != nil {
		t.Errorf("the scenario cannot be split over %d shards: %v", n, err)
	}

	// The results, on the volume, one directory per shard.
	results := c.mount("results")
	claim := pod.volumeSource("results")
	out := c.flag("--out")
	if !strings.HasPrefix(claim, "pvc:") || results == "" || !strings.HasPrefix(out, results+"/") || !strings.Contains(out, "$(JOB_COMPLETION_INDEX)") {
		t.Errorf("--out %q on volume %q mounted at %q: want a per-shard directory on the PersistentVolumeClaim", out, claim, results)
	}
	if objs["PersistentVolumeClaim/"+strings.TrimPrefix(claim, "pvc:")] == nil {
		t.Errorf("no manifest defines the claim %s", claim)
	}

	// The merge, after the shards: it waits for N summaries on the same
	// volume, then merges the run's directory.
	mp := &merge.Spec.Template.Spec
	if mp.volumeSource("results") != claim || len(mp.InitContainers) != 1 || len(mp.Containers) != 1 {
		t.Fatalf("the merge Job must mount %s and wait in an init container before merging", claim)
	}
	wait := strings.Join(append(mp.InitContainers[0].Command, mp.InitContainers[0].Args...), " ")
	if !strings.Contains(wait, "summary.json") || !strings.Contains(wait, "-ge "+strconv.Itoa(n)) {
		t.Errorf("the merge waits with %q: want it to wait for %d shards' summary.json", wait, n)
	}
	m := &mp.Containers[0]
	margs := append(slices.Clone(m.Command), m.Args...)
	shardDir := filepath.Dir(strings.Replace(out, results, m.mount("results"), 1))
	if len(margs) < 2 || margs[0] != "merge" || margs[1] != shardDir || !strings.HasPrefix(m.flag("--out"), shardDir+"/") {
		t.Errorf("the merge runs %q: want bench merge %s --out %s/…", margs, shardDir, shardDir)
	}
	if m.Image != c.Image {
		t.Errorf("the merge runs image %q, the shards %q", m.Image, c.Image)
	}
}

func intText(p *int) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(*p)
}

// TestIssue22KubernetesHardening (issue 22, item 8): the manifests could
// not pass an API key at all, mounted a service-account token bench never
// uses, ran without a seccomp profile and deployed servebench:latest. The
// shards now take the key from a Secret into the variable the scenario's
// api_key_env names; every pod runs under RuntimeDefault seccomp without a
// token; every image has a tag that is not latest; and the optional
// NetworkPolicy lets the pods reach the server's port and DNS only.
func TestIssue22KubernetesHardening(t *testing.T) {
	t.Parallel()
	objs := readManifests(t, "../../../deploy/kubernetes")
	shards := objs["Job/servebench-shards"]
	if shards == nil {
		t.Fatal("no shards Job")
	}

	// The key: a Secret reference, named by the scenario's api_key_env.
	c := &shards.Spec.Template.Spec.Containers[0]
	cm := objs["ConfigMap/servebench-scenario"]
	sc, err := scenario.Parse("ConfigMap scenario.yaml", []byte(cm.Data["scenario.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	keyVar := sc.Target.APIKeyEnv
	if keyVar == "" || !strings.HasPrefix(c.env(keyVar), "secret:") {
		t.Errorf("target.api_key_env is %q, which the shard pods take from %q: want a Secret", keyVar, c.env(keyVar))
	}

	// Every pod: no service-account token, RuntimeDefault seccomp; every
	// image tagged, not latest.
	pods := map[string]*k8sPodSpec{}
	var kustomize *k8sObject
	for name, o := range objs {
		switch o.Kind {
		case "Job":
			pods[name] = &o.Spec.Template.Spec
		case "Pod":
			pods[name] = &o.Spec.k8sPodSpec
		case "Kustomization":
			kustomize = o
		}
	}
	if len(pods) < 3 || kustomize == nil {
		t.Fatalf("found %d pod templates and kustomization %v", len(pods), kustomize != nil)
	}
	tags := map[string]string{} // image name → the tag kustomize sets
	for _, im := range kustomize.Images {
		tags[im.Name] = im.NewTag
		if im.Digest == "" && (im.NewTag == "" || im.NewTag == "latest") {
			t.Errorf("kustomization sets image %s to tag %q: pin a version or a digest", im.Name, im.NewTag)
		}
	}
	for name, p := range pods {
		if p.AutomountServiceAccountToken == nil || *p.AutomountServiceAccountToken {
			t.Errorf("%s mounts a service-account token: want automountServiceAccountToken: false", name)
		}
		if sp := p.SecurityContext.SeccompProfile; sp == nil || sp.Type != "RuntimeDefault" {
			t.Errorf("%s has no RuntimeDefault seccomp profile", name)
		}
		for _, ct := range append(slices.Clone(p.InitContainers), p.Containers...) {
			image, tag, tagged := strings.Cut(ct.Image, ":")
			if !tagged {
				tag, tagged = tags[image]
			}
			if !tagged || tag == "" || tag == "latest" {
				t.Errorf("%s container %s runs image %q: want a pinned tag, not latest", name, ct.Name, ct.Image)
			}
		}
	}

	// The optional NetworkPolicy: the servebench pods, no ingress, egress
	// to the server's port (target.url's) and to DNS only.
	np := objs["NetworkPolicy/servebench"]
	if np == nil {
		t.Fatal("no NetworkPolicy servebench")
	}
	if np.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"] != "servebench" ||
		!slices.Contains(np.Spec.PolicyTypes, "Egress") || !slices.Contains(np.Spec.PolicyTypes, "Ingress") || len(np.Spec.Ingress) != 0 {
		t.Errorf("the NetworkPolicy selects %v with types %v and %d ingress rules: want the servebench pods, Ingress and Egress, none",
			np.Spec.PodSelector.MatchLabels, np.Spec.PolicyTypes, len(np.Spec.Ingress))
	}
	u, err := url.Parse(sc.Target.URL)
	if err != nil {
		t.Fatal(err)
	}
	var ports []string
	for _, e := range np.Spec.Egress {
		if len(e.To) == 0 {
			t.Error("an egress rule without a destination allows every destination")
		}
		for _, p := range e.Ports {
			ports = append(ports, fmt.Sprintf("%s/%d", p.Protocol, p.Port))
		}
	}
	slices.Sort(ports)
	if want := []string{"TCP/53", "TCP/" + u.Port(), "UDP/53"}; !slices.Equal(ports, want) {
		t.Errorf("egress ports %v, want %v (the target's and DNS)", ports, want)
	}
}
