package check

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

// Facts are what the chart must agree with, read from the repository's
// source (as scripts/compose-check.sh reads them for docker-compose.yml).
type Facts struct {
	// Vars: every variable internal/config reads.
	Vars map[string]bool
	// Commands: the binary's commands (the first word of every cobra Use
	// in internal/command).
	Commands map[string]bool
	// Roles: the process roles of internal/store/roles.go, by constant
	// (RoleIntake: hookinbox_intake).
	Roles map[string]string
	// Version: the module's version (VERSION).
	Version string
	// Alerts: the alert rules (deploy/helm/hookinbox/files/alerts.yml),
	// decoded strictly as a PrometheusRule's spec.
	Alerts *monitoringv1.PrometheusRuleSpec
	// ScrapeJobs: the compose stack's hookinbox scrape jobs
	// (deploy/prometheus/prometheus.yml), the jobs the alert rules name.
	ScrapeJobs []string
}

var (
	quotedVar = regexp.MustCompile(`"([A-Z][A-Z0-9_]*[A-Z0-9])"`)
	cobraUse  = regexp.MustCompile(`Use:\s*"([^"]+)"`)
	roleConst = regexp.MustCompile(`(?m)^\s*(Role[A-Za-z]+)\s*=\s*"([a-z_]+)"`)
)

// readRepo reads a file of the checkout.
func readRepo(root string, parts ...string) ([]byte, error) {
	return os.ReadFile(filepath.Join(append([]string{root}, parts...)...)) //nolint:gosec // G304: the checkout's own files
}

// ReadFacts reads Facts from the checkout at root.
func ReadFacts(root string) (Facts, error) {
	f := Facts{Vars: map[string]bool{}, Commands: map[string]bool{}, Roles: map[string]string{}}
	cfg, err := readRepo(root, "internal", "config", "config.go")
	if err != nil {
		return f, err
	}
	for _, m := range quotedVar.FindAllStringSubmatch(string(cfg), -1) {
		f.Vars[m[1]] = true
	}
	files, err := filepath.Glob(filepath.Join(root, "internal", "command", "*.go"))
	if err != nil {
		return f, err
	}
	for _, p := range files {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := readRepo(p)
		if err != nil {
			return f, err
		}
		for _, m := range cobraUse.FindAllStringSubmatch(string(b), -1) {
			f.Commands[strings.Fields(m[1])[0]] = true
		}
	}
	roles, err := readRepo(root, "internal", "store", "roles.go")
	if err != nil {
		return f, err
	}
	for _, m := range roleConst.FindAllStringSubmatch(string(roles), -1) {
		f.Roles[m[1]] = m[2]
	}
	v, err := readRepo(root, "VERSION")
	if err != nil {
		return f, err
	}
	f.Version = strings.TrimSpace(string(v))
	rules, err := readRepo(root, "deploy", "helm", "hookinbox", "files", "alerts.yml")
	if err != nil {
		return f, err
	}
	var spec monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(rules, &spec); err != nil {
		return f, fmt.Errorf("files/alerts.yml as a PrometheusRule's spec: %w", err)
	}
	f.Alerts = &spec
	prom, err := readRepo(root, "deploy", "prometheus", "prometheus.yml")
	if err != nil {
		return f, err
	}
	var promCfg struct {
		ScrapeConfigs []struct {
			JobName string `json:"job_name"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal(prom, &promCfg); err != nil {
		return f, fmt.Errorf("deploy/prometheus/prometheus.yml: %w", err)
	}
	for _, sc := range promCfg.ScrapeConfigs {
		if strings.HasPrefix(sc.JobName, "hookinbox-") {
			f.ScrapeJobs = append(f.ScrapeJobs, sc.JobName)
		}
	}
	sort.Strings(f.ScrapeJobs)
	if len(f.Vars) == 0 || len(f.Commands) == 0 || len(f.Roles) == 0 || f.Version == "" || len(f.ScrapeJobs) == 0 {
		return f, fmt.Errorf("read no variables, commands, roles, version or scrape jobs from %s", root)
	}
	return f, nil
}
