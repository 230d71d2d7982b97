package check

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const full = Release + "-hookinbox"

func TestTheChartIsReleasedWithTheModule(t *testing.T) {
	t.Parallel()
	var meta struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	b, err := os.ReadFile(filepath.Join(chart.Dir, "Chart.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &meta))
	require.Equal(t, facts.Version, meta.AppVersion, "Chart.yaml's appVersion is the module's version (VERSION)")
	require.Equal(t, strings.TrimPrefix(facts.Version, "v"), meta.Version, "the chart's version is VERSION without its v")

	// The default image tag is the appVersion.
	r := render(t)
	for _, d := range r.all("Deployment") {
		for _, c := range d.Object.(*appsv1.Deployment).Spec.Template.Spec.Containers {
			require.Equal(t, "hookinbox:"+facts.Version, c.Image, d.Ref())
		}
	}
	r = render(t, "--set", "image.repository=registry.example.com/hookinbox", "--set", "image.digest=sha256:"+strings.Repeat("ab", 32))
	for _, p := range r.processes()["worker"] {
		require.Equal(t, "registry.example.com/hookinbox@sha256:"+strings.Repeat("ab", 32), p.c.Image)
	}
}

// scenarios: the values files of deploy/helm/hookinbox/ci, and the
// defaults. Each renders, decodes strictly and breaks no rule; then what
// the scenario is for.
var scenarios = []struct {
	name, values string
	check        func(t *testing.T, r rendering)
}{
	{"defaults", "", checkDefaults},
	{"Temporal Cloud, API key", "temporal-cloud-api-key-values.yaml", checkAPIKey},
	{"Temporal Cloud, mTLS", "temporal-cloud-mtls-values.yaml", checkMTLS},
	{"self-hosted Temporal, TLS", "self-hosted-tls-values.yaml", checkSelfHostedTLS},
	{"dev mode", "dev-values.yaml", checkDevMode},
	{"everything on", "everything-values.yaml", checkEverything},
}

func (c *Chart) args(values string) []string {
	if values == "" {
		return nil
	}
	return []string{"-f", c.ValuesFile(values)}
}

func TestEveryRenderingDecodesStrictlyAndKeepsTheRules(t *testing.T) {
	t.Parallel()
	for _, tt := range scenarios {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, chart.args(tt.values)...)
			requireClean(t, r)
			tt.check(t, r)
		})
	}
}

func TestHelmLint(t *testing.T) {
	t.Parallel()
	for _, tt := range scenarios {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := chart.Lint(t.Context(), chart.args(tt.values)...)
			require.NoError(t, err)
			require.Contains(t, string(out), "1 chart(s) linted, 0 chart(s) failed")
		})
	}
}

func checkDefaults(t *testing.T, r rendering) {
	count := map[string]int{}
	for _, o := range r.objs {
		count[o.Kind]++
	}
	require.Equal(t, map[string]int{
		"ServiceAccount": 1, "ConfigMap": 1, "Deployment": 3, "Job": 1, "Service": 4,
		"HorizontalPodAutoscaler": 1, "PodDisruptionBudget": 3, "NetworkPolicy": 4,
	}, count, "no Secret, no monitoring objects, no Ingress by default")

	hpa := r.one(t, "HorizontalPodAutoscaler", full+"-intake").Object.(*autoscalingv2.HorizontalPodAutoscaler)
	require.Equal(t, full+"-intake", hpa.Spec.ScaleTargetRef.Name)

	// migrate, then db roles, as the owner.
	job := r.one(t, "Job", full+"-migrate").Object.(*batchv1.Job).Spec.Template.Spec
	require.Equal(t, []string{"migrate"}, job.InitContainers[len(job.InitContainers)-1].Args)
	require.Len(t, job.Containers, 1)
	require.Equal(t, []string{"db", "roles"}, job.Containers[0].Args)
	procs := r.processes()
	for _, p := range procs["db"] {
		for _, v := range []string{"HOOKINBOX_INTAKE_DB_PASSWORD", "HOOKINBOX_WORKER_DB_PASSWORD", "HOOKINBOX_CONSOLE_DB_PASSWORD", "HOOKINBOX_PAYLOAD_READER_DB_PASSWORD"} {
			name, _ := secretRef(t, p.env(v))
			require.Equal(t, "hookinbox-database", name)
		}
		require.Nil(t, p.env("HOOKINBOX_OPERATOR_DB_PASSWORD"), "no key named: the operator role's password is left as it is")
	}

	// The key file, copied into memory by the init container.
	for _, p := range procs["webhook"] {
		f := p.env("HOOKINBOX_SECRETS_KEY_FILE")
		require.NotNil(t, f)
		v := p.volumeAt(f.Value)
		require.NotNil(t, v)
		require.NotNil(t, v.EmptyDir)
		require.Equal(t, corev1.StorageMediumMemory, v.EmptyDir.Medium)
		require.Equal(t, []string{"install", "-m", "0400"}, p.spec.InitContainers[0].Command[:3])
	}
	for _, p := range append(procs["webhook"], procs["worker"]...) {
		require.Nil(t, p.env("TEMPORAL_API_KEY"))
		require.Nil(t, p.env("TEMPORAL_TLS_CERT"))
	}
}

func temporalConfig(t *testing.T, r rendering) map[string]string {
	return r.one(t, "ConfigMap", full+"-config").Object.(*corev1.ConfigMap).Data
}

func checkAPIKey(t *testing.T, r rendering) {
	cm := temporalConfig(t, r)
	require.Equal(t, "us-east-1.aws.api.temporal.io:7233", cm["TEMPORAL_ADDRESS"])
	require.Equal(t, "hookinbox.a1b2c", cm["TEMPORAL_NAMESPACE"])
	procs := r.processes()
	for _, name := range []string{"webhook", "worker", "console"} {
		require.NotEmpty(t, procs[name])
		for _, p := range procs[name] {
			s, k := secretRef(t, p.env("TEMPORAL_API_KEY"))
			require.Equal(t, []string{"hookinbox-temporal", "api-key"}, []string{s, k}, name)
			require.Nil(t, p.env("TEMPORAL_TLS_CERT"), name)
		}
	}
}

func checkMTLS(t *testing.T, r rendering) {
	procs := r.processes()
	for _, name := range []string{"webhook", "worker", "console"} {
		require.NotEmpty(t, procs[name])
		for _, p := range procs[name] {
			require.Nil(t, p.env("TEMPORAL_API_KEY"), name)
			for _, v := range []string{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY"} {
				e := p.env(v)
				require.NotNil(t, e, name+" "+v)
				vol := p.volumeAt(e.Value)
				require.NotNil(t, vol, "%s: %s is on no mount", name, v)
				require.NotNil(t, vol.Secret)
				require.Equal(t, "hookinbox-temporal-mtls", vol.Secret.SecretName)
			}
		}
	}
}

func checkSelfHostedTLS(t *testing.T, r rendering) {
	cm := temporalConfig(t, r)
	require.Equal(t, "true", cm["TEMPORAL_TLS"])
	require.Equal(t, "temporal.internal.example.com", cm["TEMPORAL_TLS_SERVER_NAME"])
	for _, p := range r.processes()["worker"] {
		e := p.env("TEMPORAL_TLS_CA")
		require.NotNil(t, e)
		vol := p.volumeAt(e.Value)
		require.NotNil(t, vol)
		require.NotNil(t, vol.ConfigMap)
		require.Equal(t, "temporal-ca", vol.ConfigMap.Name)
	}
}

// roleOf: the role constant of internal/store/roles.go behind each URL.
var roleOf = map[string]string{
	"HOOKINBOX_INTAKE_DATABASE_URL":  "RoleIntake",
	"HOOKINBOX_WORKER_DATABASE_URL":  "RoleWorker",
	"HOOKINBOX_CONSOLE_DATABASE_URL": "RoleConsole",
	"HOOKINBOX_PAYLOAD_DATABASE_URL": "RolePayloadReader",
}

var passwordOf = map[string]string{
	"RoleIntake":        "HOOKINBOX_INTAKE_DB_PASSWORD",
	"RoleWorker":        "HOOKINBOX_WORKER_DB_PASSWORD",
	"RoleConsole":       "HOOKINBOX_CONSOLE_DB_PASSWORD",
	"RolePayloadReader": "HOOKINBOX_PAYLOAD_READER_DB_PASSWORD",
	"RoleOperator":      "HOOKINBOX_OPERATOR_DB_PASSWORD",
}

func checkDevMode(t *testing.T, r rendering) {
	secrets := r.all("Secret")
	require.Len(t, secrets, 1, "dev mode's one Secret")
	dev := secrets[0].Object.(*corev1.Secret)
	require.Equal(t, full+"-dev", dev.Name)
	job := r.one(t, "Job", full+"-migrate")
	require.Less(t, weight(dev), weight(job.Meta), "the dev Secret is a hook before the migration Job")
	require.Equal(t, "keep", dev.Annotations["helm.sh/resource-policy"])
	require.True(t, strings.HasPrefix(dev.StringData["secrets.key"], "dev-1:"))

	// Each process's URL is its own role's, with the password the Job
	// sets on that role.
	procs := r.processes()
	rolesJob := procs["db"]
	require.Len(t, rolesJob, 1)
	for _, name := range []string{"webhook", "worker", "console"} {
		for _, p := range procs[name] {
			for v, role := range roleOf {
				e := p.env(v)
				if e == nil {
					continue
				}
				s, k := secretRef(t, e)
				require.Equal(t, dev.Name, s)
				u, err := url.Parse(dev.StringData[k])
				require.NoError(t, err)
				require.Equal(t, facts.Roles[role], u.User.Username(), "%s: %s connects as %s", name, v, role)
				pw, _ := u.User.Password()
				ps, pk := secretRef(t, rolesJob[0].env(passwordOf[role]))
				require.Equal(t, dev.Name, ps)
				require.Equal(t, pw, dev.StringData[pk], "db roles sets the password %s's URL carries", v)
				require.Equal(t, "postgres.hookinbox-dev.svc.cluster.local", u.Hostname())
			}
		}
	}
	// The owner's URL stays the user's.
	s, k := secretRef(t, procs["migrate"][0].env("DATABASE_URL"))
	require.Equal(t, []string{"hookinbox-database", "owner-url"}, []string{s, k})

	notes, err := chart.Notes(t.Context(), chart.args("dev-values.yaml")...)
	require.NoError(t, err)
	require.Contains(t, notes, "DEV MODE: NOT FOR PRODUCTION")
	require.Contains(t, notes, full+"-dev")
	notes, err = chart.Notes(t.Context())
	require.NoError(t, err)
	require.NotContains(t, notes, "DEV MODE")
}

func checkEverything(t *testing.T, r rendering) {
	require.Len(t, r.all("ServiceMonitor"), 1)
	require.Len(t, r.all("PrometheusRule"), 1, "its rules are files/alerts.yml's (a rule compares them)")
	require.Len(t, r.all("Ingress"), 1)
	require.Empty(t, r.all("HorizontalPodAutoscaler"))
	procs := r.processes()
	require.Empty(t, procs["db"], "database.roles.create=false: no db roles")
	require.Len(t, procs["migrate"], 1)
	for name, ps := range procs {
		for _, p := range ps {
			require.Equal(t, "hookinbox-"+name, p.env("OTEL_SERVICE_NAME").Value)
			s, k := secretRef(t, p.env("OTEL_EXPORTER_OTLP_HEADERS"))
			require.Equal(t, []string{"hookinbox-otel", "headers"}, []string{s, k})
			s, k = secretRef(t, p.env("HOOKINBOX_SECRETS_KEY"))
			require.Equal(t, []string{"hookinbox-secrets-key", "key"}, []string{s, k})
		}
	}
	for _, p := range procs["worker"] {
		s, k := secretRef(t, p.env("HOOKINBOX_SMTP_PASSWORD"))
		require.Equal(t, []string{"hookinbox-mail", "smtp-password"}, []string{s, k})
		require.Equal(t, "smtp.example.com:587", p.env("HOOKINBOX_SMTP_ADDR").Value)
	}
	cm := temporalConfig(t, r)
	require.Equal(t, "12", cm["HOOKINBOX_RETRY_BUDGET"])
	for _, p := range append(procs["webhook"], procs["migrate"]...) {
		v := p.volumeAt("/var/run/hookinbox/db-ca/ca.crt")
		require.NotNil(t, v, "extraVolumes in every hookinbox container")
		require.Equal(t, "db-ca", v.ConfigMap.Name)
	}
}

// The templates refuse what would put a secret in the values, and values
// the chart does not know (values.schema.json).
func TestTheTemplatesRefuseSecretsAsValues(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"a password in config", []string{"--set", "config.HOOKINBOX_SMTP_PASSWORD=hunter2hunter2"}, "a secret is never a value"},
		{"a password in a component's env", []string{"--set", "worker.env.HOOKINBOX_EMAIL_API_KEY=k"}, "a secret is never a value"},
		{"a secret as an extraEnv literal", []string{"--set-json", `extraEnv=[{"name":"TEMPORAL_API_KEY","value":"k"}]`}, "holds a secret"},
		{"a database URL as an extraEnv literal", []string{"--set-json", `intake.extraEnv=[{"name":"HOOKINBOX_INTAKE_DATABASE_URL","value":"postgres://u:p@h/d"}]`}, "holds a secret"},
		{"a password next to a Secret's name", []string{"--set", "temporal.apiKey.value=k"}, "additional properties 'value' not allowed"},
		{"a misspelt setting", []string{"--set", "temporal.apikey.secretName=s"}, "additional properties 'apikey' not allowed"},
		{"what the chart sets itself", []string{"--set", "config.TEMPORAL_ADDRESS=elsewhere:7233"}, "set by the chart"},
		{"an API key and a client certificate", []string{"--set", "temporal.apiKey.secretName=a", "--set", "temporal.clientCert.secretName=b"}, "not both"},
		{"dev mode without a database", []string{"--set", "devMode.enabled=true"}, "devMode.database.host is required"},
		{"an unknown key format", []string{"--set", "secretsKey.format=plain"}, "secretsKey/format"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := chart.Template(t.Context(), tt.args...)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}
