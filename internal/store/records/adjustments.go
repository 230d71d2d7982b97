package records

// ActionWorkspaceAdjust and ActionWorkspaceErase are the operator actions
// of `hookinbox workspaces adjust` and `erase`.
const (
	ActionWorkspaceAdjust = "workspace_adjust"
	ActionWorkspaceErase  = "workspace_erase"
)

// WorkspaceTarget is the audit target naming a workspace.
func WorkspaceTarget(id string) string { return "workspace:" + id }
