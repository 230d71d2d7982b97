//go:build tools

// Package tools pins Helm, which `make chart-check` (deploy/helm/check)
// runs as `helm lint` and `helm template` on the chart in
// deploy/helm/hookinbox; lab/devenv's Helm tool builds it into .tools/.
// Separate module for the same reason as tools/temporal: Helm's large
// dependency graph (client-go and the Kubernetes API) never touches the
// service's go.mod.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
