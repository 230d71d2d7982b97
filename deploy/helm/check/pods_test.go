package check

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// passwordsOnly makes a cluster's process roles log in with their
// passwords (SCRAM), as a production server does; the superuser and the
// schema's owner keep loopback trust, standing in for the DBA's and the
// migrator's own credentials.
func passwordsOnly(t *testing.T, pg *devenv.Postgres) {
	hba := "host all postgres 127.0.0.1/32 trust\n" +
		"host all hookinbox 127.0.0.1/32 trust\n" +
		"host all all 127.0.0.1/32 scram-sha-256\n"
	require.NoError(t, os.WriteFile(filepath.Join(pg.Dir, "pg_hba.conf"), []byte(hba), 0o644))
	conn, err := pgx.Connect(t.Context(), pg.AdminURL("postgres"))
	require.NoError(t, err)
	defer conn.Close(t.Context())
	_, err = conn.Exec(t.Context(), "SELECT pg_reload_conf()")
	require.NoError(t, err)
}

// buildBinary builds cmd/hookinbox, the image's one binary.
func buildBinary(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "hookinbox")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/hookinbox")
	cmd.Dir = chart.Root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/hookinbox:\n%s", out)
	return bin
}

// The rendered pods run the real binary: the migration Job creates the
// roles on an empty database server with dev mode's passwords, and the
// intake, the worker and the console, each with only what its pod names,
// become ready on a real PostgreSQL (passwords required) and Temporal,
// connected as their own roles.
func TestTheRenderedPodsRunTheRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL and Temporal: run without -short")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	port, err := devenv.FreePort()
	require.NoError(t, err)
	// Not under t.TempDir, whose folder the server's user cannot enter.
	dir, err := os.MkdirTemp("", "hookinbox-chart-pg-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	pg, err := devenv.StartPostgres(ctx, devenv.PostgresOptions{Dir: dir, Port: port, Ephemeral: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Stop() })
	require.NoError(t, pg.EnsureDatabase(ctx, "hookinbox", "hookinbox"), "the owner and its empty database, as a DBA makes them")
	passwordsOnly(t, pg)
	temporal := testenv.TemporalAddress(t)
	bin := buildBinary(t)

	r := render(t, "-f", chart.ValuesFile("dev-values.yaml"),
		"--set", "devMode.database.host=127.0.0.1", "--set", "devMode.database.port="+strconv.Itoa(port),
		"--set", "devMode.database.sslmode=disable",
		"--set", "database.roles.admin.key=admin-url",
		"--set", "temporal.address="+temporal, "--set", "temporal.namespace=default")
	requireClean(t, r)

	// The cluster: the user's Secret (the owner's URL, and a role-creating
	// one's for db roles), the chart's dev Secret, the chart's ConfigMap.
	k := &kubelet{t: t, bin: bin,
		secrets: map[string]map[string]string{"hookinbox-database": {
			"owner-url": pg.URL("hookinbox", "hookinbox"),
			"admin-url": pg.AdminURL("hookinbox"),
		}},
		configMaps: map[string]map[string]string{}}
	var deployments []*appsv1.Deployment
	var job *batchv1.Job
	for _, o := range r.objs {
		switch x := o.Object.(type) {
		case *corev1.Secret:
			k.secrets[x.Name] = x.StringData
		case *corev1.ConfigMap:
			k.configMaps[x.Name] = x.Data
		case *appsv1.Deployment:
			deployments = append(deployments, x)
		case *batchv1.Job:
			job = x
		}
	}
	require.NotNil(t, job)
	require.Len(t, deployments, 3)

	// Before the Job, no process role exists.
	admin, err := pgx.Connect(ctx, pg.AdminURL("hookinbox"))
	require.NoError(t, err)
	defer admin.Close(context.Background())
	roles := func() []string {
		rows, err := admin.Query(ctx, `SELECT rolname FROM pg_roles WHERE rolname LIKE 'hookinbox\_%' ORDER BY 1`)
		require.NoError(t, err)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return names
	}
	require.Empty(t, roles())

	k.runPod(ctx, &job.Spec.Template.Spec, true)
	want := []string{facts.Roles["RoleConsole"], facts.Roles["RoleIntake"], facts.Roles["RoleOperator"],
		facts.Roles["RolePayloadReader"], facts.Roles["RoleWorker"]}
	slices.Sort(want)
	require.Equal(t, want, roles(), "the migration Job created the process roles")

	// An upgrade runs the Job again: it is idempotent.
	k.runPod(ctx, &job.Spec.Template.Spec, true)

	for _, d := range deployments {
		k.runPod(ctx, &d.Spec.Template.Spec, false)
	}

	// Every session on the database is a process role's: none is the
	// owner's or the superuser's (but this test's).
	rows, err := admin.Query(ctx, `SELECT DISTINCT usename FROM pg_stat_activity
		WHERE datname = 'hookinbox' AND backend_type = 'client backend' AND pid <> pg_backend_pid() ORDER BY 1`)
	require.NoError(t, err)
	users, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	for _, role := range []string{"RoleIntake", "RoleWorker", "RoleConsole"} {
		require.Contains(t, users, facts.Roles[role], "%s connected as its own role", role)
	}
	for _, u := range users {
		require.Contains(t, want, u, "a session as %s: only the process roles connect", u)
	}
}

// Without the init container's copy, hookinbox refuses the key file as the
// kubelet mounts a Secret for a non-root pod (0440: its group may read it):
// why the chart copies it into memory, 0400.
func TestAMountedKeyFileIsRefusedWithoutTheCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary: run without -short")
	}
	t.Parallel()
	bin := buildBinary(t)
	r := render(t)
	var spec *corev1.PodSpec
	for _, d := range r.all("Deployment") {
		if d.Meta.GetName() == full+"-worker" {
			spec = &d.Object.(*appsv1.Deployment).Spec.Template.Spec
		}
	}
	require.NotNil(t, spec)
	key := "k1:" + testenv.SecretsKey() + "\n"
	k := &kubelet{t: t, bin: bin, configMaps: map[string]map[string]string{},
		secrets: map[string]map[string]string{"hookinbox-secrets-key": {"secrets.key": key},
			"hookinbox-database": {"worker-url": "postgres://hookinbox_worker@127.0.0.1:1/hookinbox"}}}
	for _, o := range r.all("ConfigMap") {
		k.configMaps[o.Meta.GetName()] = o.Object.(*corev1.ConfigMap).Data
	}
	vols := k.volumes(spec)
	fi, err := os.Stat(filepath.Join(vols["secrets-key-source"], "secrets.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o440), fi.Mode().Perm(), "a Secret's file in a pod with fsGroup")

	// The key file straight from the Secret's volume: refused.
	ct := &spec.Containers[0]
	direct := *ct
	direct.VolumeMounts = append(slices.Clone(ct.VolumeMounts), corev1.VolumeMount{Name: "secrets-key-source", MountPath: "/var/run/direct", ReadOnly: true})
	c := k.start(spec, &direct, vols, map[string]string{"HOOKINBOX_SECRETS_KEY_FILE": "/var/run/direct/secrets.key"})
	require.Error(t, c.wait(t.Context()))
	require.Contains(t, c.out.String(), "is open to its group or to others (mode 0440): refusing to use it")

	// The chart's copy: accepted (the worker then goes on to its database,
	// which is not there: the failure is that, not the key).
	init := k.start(spec, &spec.InitContainers[0], vols, nil)
	require.NoError(t, init.wait(t.Context()), init.out.String())
	fi, err = os.Stat(filepath.Join(vols["secrets-key"], "secrets.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o400), fi.Mode().Perm())
	c = k.start(spec, ct, vols, nil)
	require.Error(t, c.wait(t.Context()))
	require.NotContains(t, c.out.String(), "HOOKINBOX_SECRETS_KEY_FILE")
	require.True(t, strings.Contains(c.out.String(), "127.0.0.1:1") || strings.Contains(c.out.String(), "connect"), c.out.String())
}
