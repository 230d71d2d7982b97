package command

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"
)

// DevRetention is how long `make run`'s dev server keeps a closed workflow:
// the retention of its namespace, which the dev server creates with 24 h.
// An hour is the shortest a local namespace takes. A closed resource
// workflow's story stays in the inbox and the lineage (`hookinbox explain`,
// the console); what the dev server keeps, it keeps in one SQLite file
// whose every write is serialized, and the more closed runs it holds the
// slower each new one is (docs/benchmarks.md, the rate at scale).
const DevRetention = time.Hour

// setRetention sets namespace ns's retention on the Temporal server at addr
// to d: the closed workflows older than d are deleted by the server.
func setRetention(ctx context.Context, addr, ns string, d time.Duration) error {
	nc, err := namespaceClient(addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = nc.Update(ctx, &workflowservice.UpdateNamespaceRequest{Namespace: ns,
		Config: &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(d)}})
	if err != nil {
		return fmt.Errorf("set the retention of namespace %s to %s: %w", ns, d, err)
	}
	return nil
}

// retention reads namespace ns's retention on the server at addr.
func retention(ctx context.Context, addr, ns string) (time.Duration, error) {
	nc, err := namespaceClient(addr)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	resp, err := nc.Describe(ctx, ns)
	if err != nil {
		return 0, fmt.Errorf("describe namespace %s: %w", ns, err)
	}
	return resp.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(), nil
}

// namespaceClient connects to the Temporal server at addr for namespace
// operations, with the SDK's own log discarded.
func namespaceClient(addr string) (client.NamespaceClient, error) {
	nc, err := client.NewNamespaceClient(client.Options{HostPort: addr,
		Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		return nil, fmt.Errorf("temporal %s: %w", addr, err)
	}
	return nc, nil
}
