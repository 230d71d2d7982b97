package check

import (
	"fmt"
	"net"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Violation is one rule an object breaks.
type Violation struct {
	Object, Rule, Message string
}

func (v Violation) String() string { return fmt.Sprintf("%s: %s: %s", v.Object, v.Rule, v.Message) }

// PublicPort is the name of the one container port that may be reached
// from anywhere: the intake's public port (POST /webhooks/:endpoint and
// /healthz).
const PublicPort = "http"

// secretName: a variable (or ConfigMap key) whose name says it holds a
// secret. A path to one (…_FILE) does not.
var secretName = regexp.MustCompile(`(PASSWORD|SECRET|TOKEN|_KEY$|API_KEY|DATABASE_URL|HEADERS)`)

// IsSecretName reports whether a variable of that name holds a secret.
func IsSecretName(name string) bool {
	n := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	return secretName.MatchString(n) && !strings.HasSuffix(n, "_FILE")
}

var dbVar = regexp.MustCompile(`^(DATABASE_URL|HOOKINBOX_[A-Z_]+_DATABASE_URL)$`)

// processDB: the database variables each hookinbox command gets, its own
// role's (internal/config; the owner's, DATABASE_URL, for the migrations
// alone).
var processDB = map[string][]string{
	"webhook": {"HOOKINBOX_INTAKE_DATABASE_URL"},
	"worker":  {"HOOKINBOX_WORKER_DATABASE_URL"},
	"console": {"HOOKINBOX_CONSOLE_DATABASE_URL", "HOOKINBOX_PAYLOAD_DATABASE_URL"},
	"migrate": {"DATABASE_URL"},
	"db":      {"DATABASE_URL"},
}

// processAddr: the listen address variable of each long-running process
// and the container port (by name) it must match.
var processAddr = map[string]map[string]string{
	"webhook": {"HOOKINBOX_HTTP_ADDR": PublicPort, "HOOKINBOX_INTERNAL_ADDR": "internal"},
	"worker":  {"HOOKINBOX_WORKER_ADDR": "metrics"},
	"console": {"HOOKINBOX_CONSOLE_ADDR": "console"},
}

// pod is a pod template of a workload, with what the rules need of it.
type pod struct {
	owner  Object
	labels map[string]string
	spec   *corev1.PodSpec
	job    bool
}

type checker struct {
	objs  []Object
	facts Facts
	pods  []pod
	out   []Violation
}

func (c *checker) fail(o Object, rule, format string, args ...any) {
	c.out = append(c.out, Violation{Object: o.Ref(), Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// Check applies every rule to the decoded objects of one rendering.
func Check(objs []Object, facts Facts) []Violation {
	c := &checker{objs: objs, facts: facts}
	for _, o := range objs {
		switch w := o.Object.(type) {
		case *appsv1.Deployment:
			c.pods = append(c.pods, pod{owner: o, labels: w.Spec.Template.Labels, spec: &w.Spec.Template.Spec})
		case *appsv1.StatefulSet:
			c.pods = append(c.pods, pod{owner: o, labels: w.Spec.Template.Labels, spec: &w.Spec.Template.Spec})
		case *appsv1.DaemonSet:
			c.pods = append(c.pods, pod{owner: o, labels: w.Spec.Template.Labels, spec: &w.Spec.Template.Spec})
		case *batchv1.Job:
			c.pods = append(c.pods, pod{owner: o, labels: w.Spec.Template.Labels, spec: &w.Spec.Template.Spec, job: true})
		case *batchv1.CronJob:
			c.pods = append(c.pods, pod{owner: o, labels: w.Spec.JobTemplate.Spec.Template.Labels, spec: &w.Spec.JobTemplate.Spec.Template.Spec, job: true})
		case *corev1.Pod:
			c.pods = append(c.pods, pod{owner: o, labels: w.Labels, spec: &w.Spec})
		}
	}
	c.podSecurity()
	c.serviceAccounts()
	c.secrets()
	c.databaseURLs()
	c.secretsKey()
	c.processes()
	c.hooks()
	c.networkPolicies()
	c.disruptionBudgets()
	c.topologySpread()
	c.autoscalers()
	c.services()
	c.monitoring()
	sort.SliceStable(c.out, func(i, j int) bool { return c.out[i].Object < c.out[j].Object })
	return c.out
}

func containers(s *corev1.PodSpec) []*corev1.Container {
	var out []*corev1.Container
	for i := range s.InitContainers {
		out = append(out, &s.InitContainers[i])
	}
	for i := range s.Containers {
		out = append(out, &s.Containers[i])
	}
	return out
}

// process is the hookinbox command a container runs ("" when it runs
// something else: the entry point is the binary, so no command override).
func process(ct *corev1.Container) string {
	if len(ct.Command) > 0 || len(ct.Args) == 0 {
		return ""
	}
	return ct.Args[0]
}

// --- pods ---------------------------------------------------------------

func (c *checker) podSecurity() {
	for _, p := range c.pods {
		s := p.spec
		if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
			c.fail(p.owner, "no service-account token", "automountServiceAccountToken must be false")
		}
		if s.HostNetwork || s.HostPID || s.HostIPC {
			c.fail(p.owner, "no host namespaces", "hostNetwork, hostPID and hostIPC must be off")
		}
		for _, v := range s.Volumes {
			if v.HostPath != nil {
				c.fail(p.owner, "no host paths", "volume %s mounts a host path", v.Name)
			}
		}
		psc := s.SecurityContext
		if psc == nil {
			psc = &corev1.PodSecurityContext{}
		}
		for _, ct := range containers(s) {
			sc := ct.SecurityContext
			if sc == nil {
				sc = &corev1.SecurityContext{}
			}
			name := "container " + ct.Name
			if !orBool(sc.RunAsNonRoot, psc.RunAsNonRoot) {
				c.fail(p.owner, "runAsNonRoot", "%s: runAsNonRoot must be true (on the pod or the container)", name)
			}
			if u := orInt(sc.RunAsUser, psc.RunAsUser); u != nil && *u == 0 {
				c.fail(p.owner, "runAsNonRoot", "%s: runs as uid 0", name)
			}
			prof := sc.SeccompProfile
			if prof == nil {
				prof = psc.SeccompProfile
			}
			if prof == nil || prof.Type != corev1.SeccompProfileTypeRuntimeDefault {
				c.fail(p.owner, "seccomp", "%s: seccompProfile must be RuntimeDefault (on the pod or the container)", name)
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				c.fail(p.owner, "readOnlyRootFilesystem", "%s: readOnlyRootFilesystem must be true", name)
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				c.fail(p.owner, "allowPrivilegeEscalation", "%s: allowPrivilegeEscalation must be false", name)
			}
			if sc.Privileged != nil && *sc.Privileged {
				c.fail(p.owner, "privileged", "%s: privileged", name)
			}
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
				c.fail(p.owner, "capabilities", "%s: capabilities.drop must hold ALL", name)
			} else if len(sc.Capabilities.Add) > 0 {
				c.fail(p.owner, "capabilities", "%s: adds capabilities %v", name, sc.Capabilities.Add)
			}
		}
		images := map[string]bool{}
		for _, ct := range containers(s) {
			images[ct.Image] = true
		}
		if len(images) > 1 {
			c.fail(p.owner, "one image", "containers run different images %v: every one is the project's", keys(images))
		}
	}
}

func orBool(a, b *bool) bool {
	if a != nil {
		return *a
	}
	return b != nil && *b
}

func orInt(a, b *int64) *int64 {
	if a != nil {
		return a
	}
	return b
}

func (c *checker) serviceAccounts() {
	for _, o := range c.objs {
		if sa, ok := o.Object.(*corev1.ServiceAccount); ok {
			if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
				c.fail(o, "no service-account token", "automountServiceAccountToken must be false")
			}
		}
	}
}

// --- secrets --------------------------------------------------------------

// DevModeLabel marks the one Secret the chart may create (devMode).
const DevModeLabel = "hookinbox/dev-mode"

// minSecretLen: shorter values ("true", a port) are not looked for.
const minSecretLen = 8

func (c *checker) secrets() {
	values := map[string][]string{} // secret value: where it is from
	add := func(v, from string) {
		if len(v) >= minSecretLen {
			values[v] = append(values[v], from)
		}
		// A URL's password alone is a secret too.
		if u, err := url.Parse(strings.TrimSpace(v)); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok && len(pw) >= minSecretLen {
				values[pw] = append(values[pw], from+" (its password)")
			}
		}
	}
	for _, o := range c.objs {
		s, ok := o.Object.(*corev1.Secret)
		if !ok {
			continue
		}
		if s.Labels[DevModeLabel] != "true" {
			c.fail(o, "no Secret", "the chart creates no Secret (values name existing ones), except devMode's, labelled %s", DevModeLabel)
		}
		for k, v := range s.Data {
			add(string(v), o.Ref()+" key "+k)
		}
		for k, v := range s.StringData {
			add(v, o.Ref()+" key "+k)
		}
	}
	leak := func(o Object, where, literal string) {
		var from []string
		for v, f := range values {
			if strings.Contains(literal, v) {
				from = append(from, f...)
			}
		}
		if len(from) > 0 {
			sort.Strings(from)
			c.fail(o, "no secret in a literal", "%s holds the value of %s", where, strings.Join(from, ", "))
		}
	}
	for _, o := range c.objs {
		cm, ok := o.Object.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		for k, v := range cm.Data {
			if IsSecretName(k) {
				c.fail(o, "no secret in a ConfigMap", "key %s names a secret: it belongs in a Secret", k)
			}
			leak(o, "key "+k, v)
		}
		for k := range cm.BinaryData {
			c.fail(o, "no secret in a ConfigMap", "binaryData %s: the chart's ConfigMaps hold settings only", k)
		}
	}
	for _, p := range c.pods {
		for _, ct := range containers(p.spec) {
			for _, e := range ct.Env {
				where := fmt.Sprintf("container %s: %s", ct.Name, e.Name)
				if e.ValueFrom == nil && IsSecretName(e.Name) && !securePath(p.spec, ct, e.Value) {
					c.fail(p.owner, "no secret in a literal", "%s holds a secret as a literal value: it must come from a Secret (valueFrom.secretKeyRef, or a path to a mounted one)", where)
				}
				if e.ValueFrom != nil && IsSecretName(e.Name) && e.ValueFrom.SecretKeyRef == nil {
					c.fail(p.owner, "no secret in a literal", "%s holds a secret: it must come from a Secret, not a ConfigMap or a field", where)
				}
				leak(p.owner, where, e.Value)
			}
			for _, ef := range ct.EnvFrom {
				if ef.SecretRef != nil {
					c.fail(p.owner, "secrets by name", "container %s takes all of Secret %s (envFrom): name each variable's key", ct.Name, ef.SecretRef.Name)
				}
			}
			leak(p.owner, "container "+ct.Name+" arguments", strings.Join(append(slices.Clone(ct.Command), ct.Args...), " "))
		}
	}
}

// securePath: value is a file on a read-only mount of a Secret or of
// memory (TEMPORAL_TLS_KEY, the copied key file): a path to a secret, not
// one.
func securePath(s *corev1.PodSpec, ct *corev1.Container, value string) bool {
	if !strings.HasPrefix(value, "/") {
		return false
	}
	for _, m := range ct.VolumeMounts {
		if !m.ReadOnly || !strings.HasPrefix(value, strings.TrimSuffix(m.MountPath, "/")+"/") {
			continue
		}
		for _, v := range s.Volumes {
			if v.Name == m.Name && (v.Secret != nil || (v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory)) {
				return true
			}
		}
	}
	return false
}

type secretKey struct{ name, key string }

func (c *checker) databaseURLs() {
	owner := map[secretKey]bool{}
	for _, p := range c.pods {
		for _, ct := range containers(p.spec) {
			for _, e := range ct.Env {
				if e.Name == "DATABASE_URL" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					owner[secretKey{e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key}] = true
				}
			}
		}
	}
	byRef := map[secretKey]string{} // a URL's Secret key: the variable it is
	for _, p := range c.pods {
		for _, ct := range containers(p.spec) {
			proc := process(ct)
			want := processDB[proc]
			var got []string
			for _, e := range ct.Env {
				if !dbVar.MatchString(e.Name) {
					continue
				}
				got = append(got, e.Name)
				ref := e.ValueFrom
				if ref == nil || ref.SecretKeyRef == nil {
					c.fail(p.owner, "role URL from a Secret", "container %s: %s must come from a Secret", ct.Name, e.Name)
					continue
				}
				k := secretKey{ref.SecretKeyRef.Name, ref.SecretKeyRef.Key}
				if prev, ok := byRef[k]; ok && prev != e.Name {
					c.fail(p.owner, "own role", "container %s: %s and %s read the same Secret key %s/%s: each process has its own role's URL", ct.Name, e.Name, prev, k.name, k.key)
				}
				byRef[k] = e.Name
				if !p.job && owner[k] {
					c.fail(p.owner, "own role", "container %s: %s reads the owner's URL (%s/%s), which only the migration Job gets", ct.Name, e.Name, k.name, k.key)
				}
			}
			sort.Strings(got)
			w := slices.Clone(want)
			sort.Strings(w)
			if !slices.Equal(got, w) {
				what := "no database URL"
				if len(w) > 0 {
					what = strings.Join(w, " and ")
				}
				c.fail(p.owner, "own role", "container %s (%s) gets %v: it must get %s, its own role's", ct.Name, orNone(proc), got, what)
			}
			if p.job != (proc == "migrate" || proc == "db") && proc != "" {
				c.fail(p.owner, "own role", "container %s runs %s: migrations run in the Job, the processes in Deployments", ct.Name, proc)
			}
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "not hookinbox"
	}
	return "hookinbox " + s
}

func (c *checker) secretsKey() {
	for _, p := range c.pods {
		mounts := map[string]corev1.Volume{}
		for _, v := range p.spec.Volumes {
			mounts[v.Name] = v
		}
		for _, ct := range containers(p.spec) {
			proc := process(ct)
			if proc == "" || proc == "db" {
				continue
			}
			var key, file *corev1.EnvVar
			for i, e := range ct.Env {
				switch e.Name {
				case "HOOKINBOX_SECRETS_KEY":
					key = &ct.Env[i]
				case "HOOKINBOX_SECRETS_KEY_FILE":
					file = &ct.Env[i]
				}
			}
			switch {
			case (key == nil) == (file == nil):
				c.fail(p.owner, "secrets key", "container %s: wants HOOKINBOX_SECRETS_KEY or HOOKINBOX_SECRETS_KEY_FILE, one of them", ct.Name)
			case file != nil:
				ok := false
				for _, m := range ct.VolumeMounts {
					v := mounts[m.Name]
					inMemory := v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory
					if strings.HasPrefix(file.Value, strings.TrimSuffix(m.MountPath, "/")+"/") && m.ReadOnly && (inMemory || v.Secret != nil) {
						ok = true
					}
				}
				if !ok {
					c.fail(p.owner, "secrets key", "container %s: HOOKINBOX_SECRETS_KEY_FILE %s is on no read-only mount of a Secret or of memory", ct.Name, file.Value)
				}
			}
		}
	}
}

// processes: each hookinbox container runs a command the binary has,
// reads only variables internal/config reads, listens where its container
// ports say, and the intake is ready on /readyz of its internal listener.
func (c *checker) processes() {
	configMaps := map[string]*corev1.ConfigMap{}
	for _, o := range c.objs {
		if cm, ok := o.Object.(*corev1.ConfigMap); ok {
			configMaps[cm.Name] = cm
		}
	}
	known := func(name string) bool {
		if !strings.HasPrefix(name, "HOOKINBOX_") && !strings.HasPrefix(name, "TEMPORAL_") && name != "DATABASE_URL" {
			return true // OTEL_*, the team's own
		}
		return c.facts.Vars[name]
	}
	for _, p := range c.pods {
		for _, ct := range containers(p.spec) {
			proc := process(ct)
			if proc == "" {
				continue
			}
			if !c.facts.Commands[proc] {
				c.fail(p.owner, "hookinbox command", "container %s runs %q, not a command of the binary (internal/command)", ct.Name, proc)
			}
			env := map[string]string{}
			for _, ef := range ct.EnvFrom {
				if ef.ConfigMapRef == nil {
					continue
				}
				for k, v := range configMaps[ef.ConfigMapRef.Name].Data {
					env[k] = v
				}
			}
			for _, e := range ct.Env {
				env[e.Name] = e.Value
			}
			for name := range env {
				if !known(name) {
					c.fail(p.owner, "known variable", "container %s: %s is not read by internal/config", ct.Name, name)
				}
			}
			for v, portName := range processAddr[proc] {
				port := containerPort(ct, intstr.FromString(portName))
				_, listen, _ := net.SplitHostPort(env[v])
				if port == nil || listen != strconv.Itoa(int(port.ContainerPort)) {
					c.fail(p.owner, "listen address", "container %s: %s=%q is not its %s port", ct.Name, v, env[v], portName)
				}
			}
			if proc == "webhook" {
				rp := ct.ReadinessProbe
				if rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/readyz" || portName(ct, rp.HTTPGet.Port) != "internal" {
					c.fail(p.owner, "readiness", "container %s: readiness must be GET /readyz on the internal listener", ct.Name)
				}
			}
		}
	}
}

func containerPort(ct *corev1.Container, port intstr.IntOrString) *corev1.ContainerPort {
	for i, p := range ct.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return &ct.Ports[i]
		}
	}
	return nil
}

func portName(ct *corev1.Container, port intstr.IntOrString) string {
	if p := containerPort(ct, port); p != nil {
		return p.Name
	}
	return ""
}

// podPort resolves a port (name or number) on a pod's containers to the
// container port's name ("" when none has it).
func podPort(s *corev1.PodSpec, port intstr.IntOrString) (string, bool) {
	for _, ct := range containers(s) {
		if p := containerPort(ct, port); p != nil {
			return p.Name, true
		}
	}
	return "", false
}

// --- the migration Job's hook ------------------------------------------------

const (
	hookAnnotation   = "helm.sh/hook"
	hookWeight       = "helm.sh/hook-weight"
	hookDeletePolicy = "helm.sh/hook-delete-policy"
)

func isHook(m metav1.Object) bool { return m.GetAnnotations()[hookAnnotation] != "" }

func weight(m metav1.Object) int {
	w, _ := strconv.Atoi(m.GetAnnotations()[hookWeight])
	return w
}

func (c *checker) hooks() {
	rendered := map[string]Object{} // Kind/name
	for _, o := range c.objs {
		rendered[o.Ref()] = o
	}
	for _, p := range c.pods {
		if !p.job {
			continue
		}
		a := p.owner.Meta.GetAnnotations()
		phases := strings.Split(strings.ReplaceAll(a[hookAnnotation], " ", ""), ",")
		if !slices.Contains(phases, "pre-install") || !slices.Contains(phases, "pre-upgrade") {
			c.fail(p.owner, "migration hook", "%s must be pre-install,pre-upgrade (has %q): the migrations run before the processes roll", hookAnnotation, a[hookAnnotation])
		}
		if !slices.Contains(strings.Split(a[hookDeletePolicy], ","), "before-hook-creation") {
			c.fail(p.owner, "migration hook", "%s must hold before-hook-creation, or the next upgrade cannot create the Job again", hookDeletePolicy)
		}
		// A hook runs before the release's own objects exist: what its pod
		// needs from the chart must be an earlier hook.
		for _, ref := range podRefs(p.spec) {
			o, ok := rendered[ref]
			if !ok {
				continue // the user's own
			}
			if !isHook(o.Meta) {
				c.fail(p.owner, "migration hook", "its pod needs %s, which does not exist yet when a pre-install hook runs", ref)
			} else if weight(o.Meta) >= weight(p.owner.Meta) {
				c.fail(p.owner, "migration hook", "its pod needs %s, a hook that must come first (lower %s)", ref, hookWeight)
			}
		}
	}
}

// podRefs: the objects a pod needs, as Kind/name.
func podRefs(s *corev1.PodSpec) []string {
	var out []string
	if s.ServiceAccountName != "" {
		out = append(out, "ServiceAccount/"+s.ServiceAccountName)
	}
	for _, v := range s.Volumes {
		if v.Secret != nil {
			out = append(out, "Secret/"+v.Secret.SecretName)
		}
		if v.ConfigMap != nil {
			out = append(out, "ConfigMap/"+v.ConfigMap.Name)
		}
	}
	for _, ct := range containers(s) {
		for _, e := range ct.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				out = append(out, "Secret/"+e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				out = append(out, "ConfigMap/"+e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
		for _, ef := range ct.EnvFrom {
			if ef.SecretRef != nil {
				out = append(out, "Secret/"+ef.SecretRef.Name)
			}
			if ef.ConfigMapRef != nil {
				out = append(out, "ConfigMap/"+ef.ConfigMapRef.Name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// --- the NetworkPolicy, PDBs, spread, the HPA ------------------------------

func matches(sel *metav1.LabelSelector, l map[string]string) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && !s.Empty() && s.Matches(labels.Set(l))
}

func everywhere(peers []networkingv1.NetworkPolicyPeer) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		if p.IPBlock != nil && (p.IPBlock.CIDR == "0.0.0.0/0" || p.IPBlock.CIDR == "::/0") {
			return true
		}
	}
	return false
}

// networkPolicies: every pod is selected by an ingress policy, and what a
// policy admits from anywhere is the intake's public port alone: the
// internal listener, the worker's metrics and the console only from the
// peers named.
func (c *checker) networkPolicies() {
	for _, p := range c.pods {
		selected := false
		for _, o := range c.objs {
			np, ok := o.Object.(*networkingv1.NetworkPolicy)
			if !ok || !matches(&np.Spec.PodSelector, p.labels) {
				continue
			}
			ingress := len(np.Spec.PolicyTypes) == 0 || slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
			if !ingress {
				continue
			}
			selected = true
			for i, r := range np.Spec.Ingress {
				if !everywhere(r.From) {
					continue
				}
				if len(r.Ports) == 0 {
					c.fail(o, "network policy", "ingress rule %d admits every port of %s from anywhere", i, p.owner.Ref())
				}
				for _, port := range r.Ports {
					if port.Port == nil {
						c.fail(o, "network policy", "ingress rule %d admits every port of %s from anywhere", i, p.owner.Ref())
						continue
					}
					name, found := podPort(p.spec, *port.Port)
					if found && name != PublicPort {
						c.fail(o, "network policy", "ingress rule %d admits %s's %s port from anywhere: only the public port may be", i, p.owner.Ref(), name)
					}
				}
			}
		}
		if !selected {
			c.fail(p.owner, "network policy", "no NetworkPolicy restricts ingress to its pods")
		}
	}
}

func (c *checker) disruptionBudgets() {
	for _, p := range c.pods {
		if p.job {
			continue
		}
		found := false
		for _, o := range c.objs {
			pdb, ok := o.Object.(*policyv1.PodDisruptionBudget)
			if ok && matches(pdb.Spec.Selector, p.labels) {
				found = true
				if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil {
					c.fail(o, "disruption budget", "neither maxUnavailable nor minAvailable")
				}
			}
		}
		if !found {
			c.fail(p.owner, "disruption budget", "no PodDisruptionBudget selects its pods")
		}
	}
}

func (c *checker) topologySpread() {
	for _, p := range c.pods {
		if p.job {
			continue
		}
		ok := false
		for _, t := range p.spec.TopologySpreadConstraints {
			if matches(t.LabelSelector, p.labels) {
				ok = true
			}
		}
		if !ok {
			c.fail(p.owner, "topology spread", "no topologySpreadConstraint selects its own pods")
		}
	}
}

func (c *checker) autoscalers() {
	deployments := map[string]Object{}
	for _, o := range c.objs {
		if _, ok := o.Object.(*appsv1.Deployment); ok {
			deployments[o.Meta.GetName()] = o
		}
	}
	for _, o := range c.objs {
		hpa, ok := o.Object.(*autoscalingv2.HorizontalPodAutoscaler)
		if !ok {
			continue
		}
		t := hpa.Spec.ScaleTargetRef
		target, ok := deployments[t.Name]
		if t.Kind != "Deployment" || !ok {
			c.fail(o, "autoscaler", "scales %s/%s, not a Deployment of the chart", t.Kind, t.Name)
			continue
		}
		d := target.Object.(*appsv1.Deployment)
		if d.Spec.Replicas != nil {
			c.fail(target, "autoscaler", "sets replicas, which %s owns (every upgrade would reset them)", o.Ref())
		}
		cpu := false
		for _, m := range hpa.Spec.Metrics {
			if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU {
				cpu = true
			}
		}
		if !cpu {
			c.fail(o, "autoscaler", "no CPU metric")
		}
		if hpa.Spec.MinReplicas != nil && *hpa.Spec.MinReplicas > hpa.Spec.MaxReplicas {
			c.fail(o, "autoscaler", "minReplicas %d above maxReplicas %d", *hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
		}
		for _, ct := range d.Spec.Template.Spec.Containers {
			if _, ok := ct.Resources.Requests[corev1.ResourceCPU]; !ok {
				c.fail(target, "autoscaler", "container %s requests no CPU: utilization is a share of the request", ct.Name)
			}
		}
	}
}

// --- Services, Ingress, monitoring -----------------------------------------

// servicePorts resolves a Service's ports to the container port names of
// the pods it selects.
func (c *checker) servicePorts(svc *corev1.Service) (names []string, unresolved []string) {
	for _, sp := range svc.Spec.Ports {
		target := sp.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(sp.Port)
		}
		found := false
		for _, p := range c.pods {
			if len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.labels)) {
				if n, ok := podPort(p.spec, target); ok {
					names = append(names, n)
					found = true
					break
				}
			}
		}
		if !found {
			unresolved = append(unresolved, sp.Name)
		}
	}
	return names, unresolved
}

func (c *checker) services() {
	ingressed := map[string]bool{}
	for _, o := range c.objs {
		ing, ok := o.Object.(*networkingv1.Ingress)
		if !ok {
			continue
		}
		for _, r := range ing.Spec.Rules {
			if r.HTTP == nil {
				continue
			}
			for _, path := range r.HTTP.Paths {
				if path.Backend.Service != nil {
					ingressed[path.Backend.Service.Name] = true
				}
			}
		}
		if b := ing.Spec.DefaultBackend; b != nil && b.Service != nil {
			ingressed[b.Service.Name] = true
		}
	}
	for _, o := range c.objs {
		svc, ok := o.Object.(*corev1.Service)
		if !ok {
			continue
		}
		names, unresolved := c.servicePorts(svc)
		for _, u := range unresolved {
			c.fail(o, "service", "port %s reaches no container port of the pods it selects", u)
		}
		public := slices.Contains(names, PublicPort)
		if public && slices.ContainsFunc(names, func(n string) bool { return n != PublicPort }) {
			c.fail(o, "service", "serves the public port beside %v: the internal listener and the console are never in the public Service", names)
		}
		exposed := svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer || ingressed[svc.Name]
		if exposed && (!public || len(names) != 1) {
			c.fail(o, "service", "is exposed (type %s, or behind an Ingress) with ports %v: only the intake's public port may be", svc.Spec.Type, names)
		}
	}
	for name := range ingressed {
		found := false
		for _, o := range c.objs {
			if _, ok := o.Object.(*corev1.Service); ok && o.Meta.GetName() == name {
				found = true
			}
		}
		if !found {
			c.fail(Object{Kind: "Ingress", Meta: &metav1.ObjectMeta{Name: "*"}}, "service", "routes to Service %s, which the chart does not render", name)
		}
	}
}

func (c *checker) monitoring() {
	for _, o := range c.objs {
		switch m := o.Object.(type) {
		case *monitoringv1.ServiceMonitor:
			c.serviceMonitor(o, m)
		case *monitoringv1.PrometheusRule:
			if c.facts.Alerts == nil {
				c.fail(o, "alert rules", "no alert rules read from files/alerts.yml to compare with")
			} else if !reflect.DeepEqual(m.Spec, *c.facts.Alerts) {
				c.fail(o, "alert rules", "its rules are not files/alerts.yml's, the one source")
			}
		}
	}
}

func (c *checker) serviceMonitor(o Object, m *monitoringv1.ServiceMonitor) {
	if m.Spec.JobLabel == "" {
		c.fail(o, "scrape jobs", "no jobLabel: the job would be the Service's name, not the %v the alert rules name", c.facts.ScrapeJobs)
	}
	jobs := map[string]bool{}
	for _, so := range c.objs {
		svc, ok := so.Object.(*corev1.Service)
		if !ok || !matches(&m.Spec.Selector, svc.Labels) {
			continue
		}
		job := svc.Labels[m.Spec.JobLabel]
		if job == "" {
			c.fail(so, "scrape jobs", "selected by %s but has no %s label", o.Ref(), m.Spec.JobLabel)
		}
		jobs[job] = true
		names, _ := c.servicePorts(svc)
		if slices.Contains(names, PublicPort) {
			c.fail(so, "scrape jobs", "%s scrapes the public port, which serves no /metrics", o.Ref())
		}
		has := false
		for _, e := range m.Spec.Endpoints {
			for _, sp := range svc.Spec.Ports {
				if e.Port != "" && e.Port == sp.Name {
					has = true
				}
			}
		}
		if !has {
			c.fail(so, "scrape jobs", "%s names none of its ports", o.Ref())
		}
	}
	if want := c.facts.ScrapeJobs; !reflect.DeepEqual(keys(jobs), want) {
		c.fail(o, "scrape jobs", "scrapes jobs %v; the alert rules and the compose stack's Prometheus name %v", keys(jobs), want)
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
