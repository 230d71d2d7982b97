package check

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// doc is one rendered object as plain YAML, to plant an error in.
type doc = map[string]any

// at walks a path of map keys and list indexes, creating nothing.
func at(t *testing.T, d any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := d.(map[string]any)
			require.True(t, ok, "%v: not a map at %q", path, k)
			d = m[k]
		case int:
			l, ok := d.([]any)
			require.True(t, ok && k < len(l), "%v: no item %d", path, k)
			d = l[k]
		}
	}
	return d
}

func mapAt(t *testing.T, d any, path ...any) map[string]any {
	t.Helper()
	m, ok := at(t, d, path...).(map[string]any)
	require.True(t, ok, "%v is not a map", path)
	return m
}

func podSpecOf(t *testing.T, d doc) map[string]any {
	return mapAt(t, d, "spec", "template", "spec")
}

func containerOf(t *testing.T, d doc, i int) map[string]any {
	return mapAt(t, podSpecOf(t, d), "containers", i)
}

func addEnv(t *testing.T, c map[string]any, env map[string]any) {
	l, _ := c["env"].([]any)
	c["env"] = append(l, env)
}

func envNamed(t *testing.T, c map[string]any, name string) map[string]any {
	t.Helper()
	for _, e := range c["env"].([]any) {
		if m := e.(map[string]any); m["name"] == name {
			return m
		}
	}
	require.Failf(t, "no such variable", "%s", name)
	return nil
}

// split parses a manifest into plain documents.
func split(t *testing.T, manifest []byte) []doc {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	var docs []doc
	for {
		b, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		require.NoError(t, err)
		var d doc
		require.NoError(t, yaml.Unmarshal(b, &d))
		if d != nil {
			docs = append(docs, d)
		}
	}
}

func join(t *testing.T, docs []doc) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, d := range docs {
		y, err := yaml.Marshal(d)
		require.NoError(t, err)
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes()
}

// edits of one document, found by kind and name.
type edit struct {
	kind, name string
	f          func(t *testing.T, d doc)
}

func edited(t *testing.T, base []byte, edits ...edit) []byte {
	t.Helper()
	docs := split(t, base)
	for _, e := range edits {
		found := false
		for i, d := range docs {
			if d["kind"] == e.kind && mapAt(t, d, "metadata")["name"] == e.name {
				found = true
				if e.f == nil { // delete it
					docs = append(docs[:i], docs[i+1:]...)
				} else {
					e.f(t, d)
				}
				break
			}
		}
		require.True(t, found, "%s/%s not rendered", e.kind, e.name)
	}
	return join(t, docs)
}

var bases = struct {
	sync.Mutex
	m map[string][]byte
}{m: map[string][]byte{}}

// base renders a scenario once for all the planted errors.
func base(t *testing.T, values string) []byte {
	t.Helper()
	bases.Lock()
	defer bases.Unlock()
	if b, ok := bases.m[values]; ok {
		return b
	}
	r := render(t, chart.args(values)...)
	requireClean(t, r)
	bases.m[values] = r.manifest
	return r.manifest
}

// devPassword: a value of the dev Secret, to plant elsewhere.
func devPassword(t *testing.T) string {
	objs, err := Decode(base(t, "dev-values.yaml"))
	require.NoError(t, err)
	for _, o := range objs {
		if s, ok := o.Object.(*corev1.Secret); ok {
			return s.StringData["worker-password"]
		}
	}
	require.Fail(t, "no dev Secret")
	return ""
}

// Every planted error fails the check: the decoding for an unknown field
// or kind, a rule for the rest. Each shows that a rule can fail.
func TestPlantedErrorsFailTheCheck(t *testing.T) {
	t.Parallel()
	intake, worker, console, job := full+"-intake", full+"-worker", full+"-console", full+"-migrate"
	for _, tt := range []struct {
		name, values string
		edits        []edit
		extra        string // a document to append
		want         string
	}{
		{name: "an unknown field", edits: []edit{{"Deployment", intake, func(t *testing.T, d doc) {
			containerOf(t, d, 0)["securityContex"] = map[string]any{"privileged": true}
		}}}, want: `unknown field "spec.template.spec.containers[0].securityContex"`},
		{name: "a field in the wrong place", edits: []edit{{"Deployment", worker, func(t *testing.T, d doc) {
			podSpecOf(t, d)["readOnlyRootFilesystem"] = true
		}}}, want: `unknown field "spec.template.spec.readOnlyRootFilesystem"`},
		{name: "an unknown kind", extra: "apiVersion: v1\nkind: Secrets\nmetadata:\n  name: x\n", want: `no kind "Secrets" is registered`},
		{name: "a pod without runAsNonRoot", edits: []edit{{"Deployment", intake, func(t *testing.T, d doc) {
			delete(mapAt(t, podSpecOf(t, d), "securityContext"), "runAsNonRoot")
			for _, list := range []string{"initContainers", "containers"} {
				for i := range podSpecOf(t, d)[list].([]any) {
					delete(mapAt(t, podSpecOf(t, d), list, i, "securityContext"), "runAsNonRoot")
				}
			}
		}}}, want: "runAsNonRoot: container intake: runAsNonRoot must be true"},
		{name: "a container as root", edits: []edit{{"Deployment", worker, func(t *testing.T, d doc) {
			mapAt(t, containerOf(t, d, 0), "securityContext")["runAsUser"] = 0
		}}}, want: "runs as uid 0"},
		{name: "a writable root filesystem", edits: []edit{{"Deployment", worker, func(t *testing.T, d doc) {
			mapAt(t, containerOf(t, d, 0), "securityContext")["readOnlyRootFilesystem"] = false
		}}}, want: "readOnlyRootFilesystem must be true"},
		{name: "a capability kept", edits: []edit{{"Deployment", console, func(t *testing.T, d doc) {
			mapAt(t, containerOf(t, d, 0), "securityContext", "capabilities")["drop"] = []any{"NET_RAW"}
		}}}, want: "capabilities.drop must hold ALL"},
		{name: "privilege escalation", edits: []edit{{"Job", job, func(t *testing.T, d doc) {
			mapAt(t, containerOf(t, d, 0), "securityContext")["allowPrivilegeEscalation"] = true
		}}}, want: "allowPrivilegeEscalation must be false"},
		{name: "a host path", edits: []edit{{"Deployment", worker, func(t *testing.T, d doc) {
			podSpecOf(t, d)["volumes"] = append(at(t, podSpecOf(t, d), "volumes").([]any), map[string]any{"name": "host", "hostPath": map[string]any{"path": "/"}})
		}}}, want: "volume host mounts a host path"},
		{name: "a mounted token", edits: []edit{{"Deployment", intake, func(t *testing.T, d doc) {
			podSpecOf(t, d)["automountServiceAccountToken"] = true
		}}}, want: "automountServiceAccountToken must be false"},
		{name: "no seccomp profile", edits: []edit{{"Deployment", console, func(t *testing.T, d doc) {
			delete(mapAt(t, podSpecOf(t, d), "securityContext"), "seccompProfile")
			delete(mapAt(t, containerOf(t, d, 0), "securityContext"), "seccompProfile")
		}}}, want: "container console: seccompProfile must be RuntimeDefault"},
		{name: "the owner's URL on the intake", edits: []edit{{"Deployment", intake, func(t *testing.T, d doc) {
			addEnv(t, containerOf(t, d, 0), map[string]any{"name": "DATABASE_URL", "valueFrom": map[string]any{
				"secretKeyRef": map[string]any{"name": "hookinbox-database", "key": "owner-url"}}})
		}}}, want: "reads the owner's URL"},
		{name: "a role URL as a literal", edits: []edit{{"Deployment", worker, func(t *testing.T, d doc) {
			e := envNamed(t, containerOf(t, d, 0), "HOOKINBOX_WORKER_DATABASE_URL")
			delete(e, "valueFrom")
			e["value"] = "postgres://hookinbox_worker:pw@db/hookinbox"
		}}}, want: "HOOKINBOX_WORKER_DATABASE_URL holds a secret as a literal value"},
		{name: "two processes on one role", edits: []edit{{"Deployment", console, func(t *testing.T, d doc) {
			mapAt(t, envNamed(t, containerOf(t, d, 0), "HOOKINBOX_CONSOLE_DATABASE_URL"), "valueFrom", "secretKeyRef")["key"] = "worker-url"
		}}}, want: "read the same Secret key hookinbox-database/worker-url"},
		{name: "the console without its payload pool", edits: []edit{{"Deployment", console, func(t *testing.T, d doc) {
			envNamed(t, containerOf(t, d, 0), "HOOKINBOX_PAYLOAD_DATABASE_URL")["name"] = "HOOKINBOX_PAYLOAD_DATABASE_URI"
		}}}, want: "it must get HOOKINBOX_CONSOLE_DATABASE_URL and HOOKINBOX_PAYLOAD_DATABASE_URL"},
		{name: "a Secret's value in a ConfigMap", values: "dev-values.yaml", edits: []edit{{"ConfigMap", full + "-config", func(t *testing.T, d doc) {
			mapAt(t, d, "data")["HOOKINBOX_SMTP_USERNAME"] = devPassword(t)
		}}}, want: "key HOOKINBOX_SMTP_USERNAME holds the value of Secret/" + full + "-dev key worker-password"},
		{name: "a Secret's value in an env literal", values: "dev-values.yaml", edits: []edit{{"Deployment", worker, func(t *testing.T, d doc) {
			addEnv(t, containerOf(t, d, 0), map[string]any{"name": "HOOKINBOX_SMTP_USERNAME", "value": "user:" + devPassword(t)})
		}}}, want: "HOOKINBOX_SMTP_USERNAME holds the value of Secret/" + full + "-dev key worker-password"},
		{name: "a secret's name in a ConfigMap", edits: []edit{{"ConfigMap", full + "-config", func(t *testing.T, d doc) {
			mapAt(t, d, "data")["TEMPORAL_API_KEY"] = "k"
		}}}, want: "key TEMPORAL_API_KEY names a secret"},
		{name: "a Secret of the chart's own", extra: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: hk-extra\nstringData:\n  k: verysecretvalue\n", want: "the chart creates no Secret"},
		{name: "the Job without its hook", edits: []edit{{"Job", job, func(t *testing.T, d doc) {
			delete(mapAt(t, d, "metadata", "annotations"), "helm.sh/hook")
		}}}, want: "must be pre-install,pre-upgrade"},
		{name: "the Job needing the chart's ConfigMap", edits: []edit{{"Job", job, func(t *testing.T, d doc) {
			containerOf(t, d, 0)["envFrom"] = []any{map[string]any{"configMapRef": map[string]any{"name": full + "-config"}}}
		}}}, want: "needs ConfigMap/" + full + "-config, which does not exist yet"},
		{name: "the internal listener open to all", edits: []edit{{"NetworkPolicy", intake, func(t *testing.T, d doc) {
			delete(mapAt(t, d, "spec", "ingress", 1), "from")
		}}}, want: "admits Deployment/" + intake + "'s internal port from anywhere"},
		{name: "an ingress rule with no ports", edits: []edit{{"NetworkPolicy", intake, func(t *testing.T, d doc) {
			delete(mapAt(t, d, "spec", "ingress", 0), "ports")
		}}}, want: "admits every port of Deployment/" + intake + " from anywhere"},
		{name: "the console open to all", edits: []edit{{"NetworkPolicy", console, func(t *testing.T, d doc) {
			mapAt(t, d, "spec")["ingress"] = []any{map[string]any{"ports": []any{map[string]any{"port": 9092}}}}
		}}}, want: "console port from anywhere"},
		{name: "no NetworkPolicy for the console", edits: []edit{{"NetworkPolicy", console, nil}}, want: "Deployment/" + console + ": network policy: no NetworkPolicy"},
		{name: "no PodDisruptionBudget for the worker", edits: []edit{{"PodDisruptionBudget", worker, nil}}, want: "no PodDisruptionBudget selects its pods"},
		{name: "no topology spread", edits: []edit{{"Deployment", intake, func(t *testing.T, d doc) {
			delete(podSpecOf(t, d), "topologySpreadConstraints")
		}}}, want: "no topologySpreadConstraint"},
		{name: "replicas beside the HPA", edits: []edit{{"Deployment", intake, func(t *testing.T, d doc) {
			mapAt(t, d, "spec")["replicas"] = 3
		}}}, want: "sets replicas"},
		{name: "an HPA without CPU", edits: []edit{{"HorizontalPodAutoscaler", intake, func(t *testing.T, d doc) {
			mapAt(t, d, "spec", "metrics", 0, "resource")["name"] = "memory"
		}}}, want: "no CPU metric"},
		{name: "the internal listener in the public Service", edits: []edit{{"Service", intake, func(t *testing.T, d doc) {
			mapAt(t, d, "spec")["ports"] = append(at(t, d, "spec", "ports").([]any), map[string]any{"name": "metrics", "port": 9090, "targetPort": "internal"})
		}}}, want: "serves the public port beside"},
		{name: "the console exposed", edits: []edit{{"Service", console, func(t *testing.T, d doc) {
			mapAt(t, d, "spec")["type"] = "LoadBalancer"
		}}}, want: "is exposed"},
		{name: "a variable hookinbox does not read", edits: []edit{{"Deployment", worker, func(t *testing.T, d doc) {
			addEnv(t, containerOf(t, d, 0), map[string]any{"name": "HOOKINBOX_NO_SUCH_SETTING", "value": "1"})
		}}}, want: "HOOKINBOX_NO_SUCH_SETTING is not read by internal/config"},
		{name: "a command the binary lacks", edits: []edit{{"Deployment", worker, func(t *testing.T, d doc) {
			containerOf(t, d, 0)["args"] = []any{"wroker"}
		}}}, want: `runs "wroker", not a command of the binary`},
		{name: "a listener off its port", edits: []edit{{"Deployment", intake, func(t *testing.T, d doc) {
			envNamed(t, containerOf(t, d, 0), "HOOKINBOX_INTERNAL_ADDR")["value"] = ":9999"
		}}}, want: `HOOKINBOX_INTERNAL_ADDR=":9999" is not its internal port`},
		{name: "readiness on the public port", edits: []edit{{"Deployment", intake, func(t *testing.T, d doc) {
			mapAt(t, containerOf(t, d, 0), "readinessProbe", "httpGet")["port"] = "http"
		}}}, want: "readiness must be GET /readyz on the internal listener"},
		{name: "no secrets key", edits: []edit{{"Deployment", worker, func(t *testing.T, d doc) {
			envNamed(t, containerOf(t, d, 0), "HOOKINBOX_SECRETS_KEY_FILE")["name"] = "HOOKINBOX_SECRETS_KEY_PATH"
		}}}, want: "wants HOOKINBOX_SECRETS_KEY or HOOKINBOX_SECRETS_KEY_FILE"},
		{name: "a ServiceMonitor without the job label", values: "everything-values.yaml", edits: []edit{{"ServiceMonitor", full, func(t *testing.T, d doc) {
			delete(mapAt(t, d, "spec"), "jobLabel")
		}}}, want: "no jobLabel"},
		{name: "alert rules that are a copy", values: "everything-values.yaml", edits: []edit{{"PrometheusRule", full, func(t *testing.T, d doc) {
			mapAt(t, d, "spec", "groups", 0, "rules", 0)["for"] = "1h"
		}}}, want: "not files/alerts.yml's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := edited(t, base(t, tt.values), tt.edits...)
			if tt.extra != "" {
				m = append(m, []byte("---\n"+tt.extra)...)
			}
			objs, err := Decode(m)
			if err != nil {
				require.Contains(t, err.Error(), tt.want)
				return
			}
			var got []string
			for _, v := range Check(objs, facts) {
				got = append(got, v.String())
			}
			all := strings.Join(got, "\n")
			require.Contains(t, all, tt.want, "the check must fail on %s", tt.name)
		})
	}
}
