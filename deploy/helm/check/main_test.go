package check

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/lab/testenv"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// The chart and the repository's facts, shared by every test (building
// Helm, the first time on a machine, takes minutes).
var (
	chart *Chart
	facts Facts
)

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	var err error
	if chart, err = Open(ctx, os.Stderr); err == nil {
		facts, err = ReadFacts(chart.Root)
	}
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart check:", err)
		os.Exit(1)
	}
	// Stops the PostgreSQL and Temporal servers the pods test started.
	testenv.Main(m)
}

// rendering is one `helm template` of the chart, decoded.
type rendering struct {
	manifest []byte
	objs     []Object
}

// render renders with args and decodes strictly; the decoding must succeed.
func render(t *testing.T, args ...string) rendering {
	t.Helper()
	out, err := chart.Template(t.Context(), args...)
	require.NoError(t, err)
	objs, err := Decode(out)
	require.NoError(t, err, "strict decoding")
	require.NotEmpty(t, objs)
	return rendering{manifest: out, objs: objs}
}

// requireClean: no rule broken.
func requireClean(t *testing.T, r rendering) {
	t.Helper()
	var lines []string
	for _, v := range Check(r.objs, facts) {
		lines = append(lines, v.String())
	}
	require.Empty(t, lines, "rules broken:\n%s", strings.Join(lines, "\n"))
}

func (r rendering) all(kind string) []Object {
	var out []Object
	for _, o := range r.objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func (r rendering) one(t *testing.T, kind, name string) Object {
	t.Helper()
	for _, o := range r.objs {
		if o.Kind == kind && o.Meta.GetName() == name {
			return o
		}
	}
	require.Failf(t, "not rendered", "%s/%s", kind, name)
	return Object{}
}

// processes: every container running a hookinbox command, by command
// ("db" for db roles), with its pod.
func (r rendering) processes() map[string][]proc {
	out := map[string][]proc{}
	for _, o := range r.objs {
		var s *corev1.PodSpec
		switch w := o.Object.(type) {
		case *appsv1.Deployment:
			s = &w.Spec.Template.Spec
		case *batchv1.Job:
			s = &w.Spec.Template.Spec
		default:
			continue
		}
		for _, ct := range containers(s) {
			if p := process(ct); p != "" {
				out[p] = append(out[p], proc{owner: o, spec: s, c: ct})
			}
		}
	}
	return out
}

type proc struct {
	owner Object
	spec  *corev1.PodSpec
	c     *corev1.Container
}

func (p proc) env(name string) *corev1.EnvVar {
	for i, e := range p.c.Env {
		if e.Name == name {
			return &p.c.Env[i]
		}
	}
	return nil
}

// volumeAt: the volume mounted at the folder holding path.
func (p proc) volumeAt(path string) *corev1.Volume {
	for _, m := range p.c.VolumeMounts {
		if strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/") {
			for i, v := range p.spec.Volumes {
				if v.Name == m.Name {
					return &p.spec.Volumes[i]
				}
			}
		}
	}
	return nil
}

func secretRef(t *testing.T, e *corev1.EnvVar) (name, key string) {
	t.Helper()
	require.NotNil(t, e)
	require.NotNil(t, e.ValueFrom, e.Name)
	require.NotNil(t, e.ValueFrom.SecretKeyRef, e.Name)
	return e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key
}
