// Package check checks the Helm chart in deploy/helm/hookinbox: it renders
// the chart with the pinned Helm (lab/devenv's Helm tool, tools/helm),
// decodes every rendered object strictly into its Go type (k8s.io/api for
// the core kinds, prometheus-operator's API for ServiceMonitor and
// PrometheusRule: an unknown field or kind fails), and applies the chart's
// rules to what it decoded: the security settings of every pod, no secret
// in a ConfigMap or an environment literal, each process on its own
// database role's URL from a Secret, the migration Job's hook, the
// NetworkPolicy, PodDisruptionBudgets, topology spread and the HPA. Its
// tests also plant each kind of mistake in a rendering and see the check
// fail, and run the rendered pods' containers as local processes (the
// real binary, a real PostgreSQL that asks the process roles for their
// passwords, the Temporal dev server), as a kubelet would start them.
//
// It is a module of its own so that the root module, which a team's build
// requires, never carries the Kubernetes API. `make chart-check` runs its
// tests; nothing else imports it.
package check
