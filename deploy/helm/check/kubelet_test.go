package check

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kubelet runs a rendered pod's containers as local processes, doing what
// a kubelet does with what the pod names: variables from the ConfigMaps
// and Secrets (a missing one fails the container, as
// CreateContainerConfigError does), volumes as folders with the modes a
// non-root pod with fsGroup gets, the init containers in order, then the
// probes. What a node adds besides (the image's filesystem, the network
// namespace, the security context) it cannot: the rules check those. The
// listen addresses move to free loopback ports: the fixed ones belong to
// whoever runs `make run` on this machine.
type kubelet struct {
	t          *testing.T
	bin        string // the hookinbox binary: every image's entry point
	secrets    map[string]map[string]string
	configMaps map[string]map[string]string
}

// container is one started container.
type container struct {
	name  string
	cmd   *exec.Cmd
	ports map[string]int // container port name: the loopback port it listens on
	out   *lockedBuffer
	done  chan struct{}
	err   error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fsGroupMode is what the kubelet makes of a Secret's or ConfigMap's file
// mode when the pod has an fsGroup: the group may read it.
func fsGroupMode(mode int32, s *corev1.PodSpec) fs.FileMode {
	m := fs.FileMode(mode)
	if s.SecurityContext != nil && s.SecurityContext.FSGroup != nil {
		m |= 0o440
	}
	return m
}

// volumes makes each of the pod's volumes a folder: its name to the path.
func (k *kubelet) volumes(s *corev1.PodSpec) map[string]string {
	t := k.t
	root := t.TempDir()
	out := map[string]string{}
	write := func(dir string, data map[string]string, items []corev1.KeyToPath, defaultMode *int32, what string) {
		mode := int32(0o644)
		if defaultMode != nil {
			mode = *defaultMode
		}
		if len(items) == 0 {
			for key := range data {
				items = append(items, corev1.KeyToPath{Key: key, Path: key})
			}
		}
		for _, it := range items {
			v, ok := data[it.Key]
			require.True(t, ok, "%s has no key %s: the pod would not start", what, it.Key)
			m := mode
			if it.Mode != nil {
				m = *it.Mode
			}
			p := filepath.Join(dir, it.Path)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(v), 0o600))
			require.NoError(t, os.Chmod(p, fsGroupMode(m, s)))
		}
	}
	for _, v := range s.Volumes {
		dir := filepath.Join(root, v.Name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		out[v.Name] = dir
		switch {
		case v.EmptyDir != nil:
		case v.Secret != nil:
			data, ok := k.secrets[v.Secret.SecretName]
			require.True(t, ok, "no Secret %s: the pod would not start", v.Secret.SecretName)
			write(dir, data, v.Secret.Items, v.Secret.DefaultMode, "Secret "+v.Secret.SecretName)
		case v.ConfigMap != nil:
			data, ok := k.configMaps[v.ConfigMap.Name]
			require.True(t, ok, "no ConfigMap %s: the pod would not start", v.ConfigMap.Name)
			write(dir, data, v.ConfigMap.Items, v.ConfigMap.DefaultMode, "ConfigMap "+v.ConfigMap.Name)
		default:
			require.Failf(t, "volume kind", "volume %s: not emulated", v.Name)
		}
	}
	return out
}

// source is a ConfigMap's or a Secret's data, as the pod would see it.
func (k *kubelet) source(kind, name string) (map[string]string, error) {
	data, ok := map[string]map[string]map[string]string{"ConfigMap": k.configMaps, "Secret": k.secrets}[kind][name]
	if !ok {
		return nil, fmt.Errorf("%s %q not found", kind, name)
	}
	return data, nil
}

// env is the container's environment as the kubelet builds it: envFrom,
// then env (which wins), values from their Secrets and ConfigMaps.
func (k *kubelet) env(ct *corev1.Container) (map[string]string, error) {
	out := map[string]string{}
	for _, ef := range ct.EnvFrom {
		kind, name := "ConfigMap", ""
		if ef.ConfigMapRef != nil {
			name = ef.ConfigMapRef.Name
		} else if ef.SecretRef != nil {
			kind, name = "Secret", ef.SecretRef.Name
		}
		data, err := k.source(kind, name)
		if err != nil {
			return nil, err
		}
		for key, v := range data {
			out[ef.Prefix+key] = v
		}
	}
	for _, e := range ct.Env {
		if e.ValueFrom == nil {
			out[e.Name] = e.Value
			continue
		}
		var kind, name, key string
		switch r := e.ValueFrom; {
		case r.SecretKeyRef != nil:
			kind, name, key = "Secret", r.SecretKeyRef.Name, r.SecretKeyRef.Key
		case r.ConfigMapKeyRef != nil:
			kind, name, key = "ConfigMap", r.ConfigMapKeyRef.Name, r.ConfigMapKeyRef.Key
		default:
			return nil, fmt.Errorf("%s: valueFrom not emulated", e.Name)
		}
		data, err := k.source(kind, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name, err)
		}
		v, ok := data[key]
		if !ok {
			return nil, fmt.Errorf("%s: couldn't find key %s in %s %s", e.Name, key, kind, name)
		}
		out[e.Name] = v
	}
	return out, nil
}

// start starts a container of pod spec s with volumes vols; override
// replaces variables after the kubelet's (a planted mistake).
func (k *kubelet) start(s *corev1.PodSpec, ct *corev1.Container, vols map[string]string, override map[string]string) *container {
	t := k.t
	env, err := k.env(ct)
	require.NoError(t, err, "container %s would not start", ct.Name)
	for key, v := range override {
		env[key] = v
	}
	// Mount paths become the volumes' folders.
	local := func(p string) string {
		for _, m := range ct.VolumeMounts {
			mp := strings.TrimSuffix(m.MountPath, "/")
			if p == mp || strings.HasPrefix(p, mp+"/") {
				return vols[m.Name] + strings.TrimPrefix(p, mp)
			}
		}
		return p
	}
	c := &container{name: ct.Name, ports: map[string]int{}, out: &lockedBuffer{}, done: make(chan struct{})}
	// Each listen address to a free loopback port, its container port
	// with it.
	if addrs, ok := processAddr[process(ct)]; ok {
		for v, portName := range addrs {
			port, err := devenv.FreePort()
			require.NoError(t, err)
			env[v] = "127.0.0.1:" + strconv.Itoa(port)
			c.ports[portName] = port
		}
	}
	var argv []string
	for _, a := range append(append([]string{}, ct.Command...), ct.Args...) {
		argv = append(argv, local(a))
	}
	if len(ct.Command) == 0 {
		argv = append([]string{k.bin}, argv...)
	}
	c.cmd = exec.Command(argv[0], argv[1:]...)
	c.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + local("/tmp")}
	for key, v := range env {
		c.cmd.Env = append(c.cmd.Env, key+"="+local(v))
	}
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, c.cmd.Start(), "start %s", ct.Name)
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.stop() })
	return c
}

func (c *container) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}

// wait waits for the container to exit and returns how it did.
func (c *container) wait(ctx context.Context) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return fmt.Errorf("%s still running: %w", c.name, ctx.Err())
	}
}

// probe: one attempt of a probe on the container.
func (c *container) probe(ct *corev1.Container, p *corev1.Probe) error {
	portOf := func(port intstr.IntOrString) (int, error) {
		name := portName(ct, port)
		if n, ok := c.ports[name]; ok {
			return n, nil
		}
		return 0, fmt.Errorf("probe port %s is no listener of the container", port.String())
	}
	switch {
	case p.HTTPGet != nil:
		port, err := portOf(p.HTTPGet.Port)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, p.HTTPGet.Path), nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("GET %s: %s", p.HTTPGet.Path, resp.Status)
		}
		return nil
	case p.TCPSocket != nil:
		port, err := portOf(p.TCPSocket.Port)
		if err != nil {
			return err
		}
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 3*time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	}
	return errors.New("probe kind not emulated")
}

// ready waits until the container's readiness and liveness probes pass,
// failing t if it exits first.
func (c *container) ready(ctx context.Context, ct *corev1.Container) error {
	for {
		err := errors.New("no probe")
		if ct.ReadinessProbe != nil {
			err = c.probe(ct, ct.ReadinessProbe)
			if err == nil && ct.LivenessProbe != nil {
				err = c.probe(ct, ct.LivenessProbe)
			}
		}
		if err == nil {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited (%v) before it was ready:\n%s", c.name, c.err, c.out.String())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready (%v):\n%s", c.name, err, c.out.String())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// runPod runs the pod: its init containers one by one to success, then
// its containers. A Job's are waited for; a Deployment's must become
// ready, and are returned running.
func (k *kubelet) runPod(ctx context.Context, s *corev1.PodSpec, job bool) []*container {
	t := k.t
	vols := k.volumes(s)
	for i := range s.InitContainers {
		ct := &s.InitContainers[i]
		c := k.start(s, ct, vols, nil)
		require.NoError(t, c.wait(ctx), "init container %s:\n%s", ct.Name, c.out.String())
	}
	var out []*container
	for i := range s.Containers {
		ct := &s.Containers[i]
		c := k.start(s, ct, vols, nil)
		if job {
			require.NoError(t, c.wait(ctx), "container %s:\n%s", ct.Name, c.out.String())
		} else {
			require.NoError(t, c.ready(ctx, ct))
		}
		out = append(out, c)
	}
	return out
}
