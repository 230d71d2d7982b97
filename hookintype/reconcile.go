package hookintype

// Divergence is one field where the local state and the provider's differ,
// found by a handler or a reconciliation and recorded for the operators
// (`hookinbox status`, the console).
type Divergence struct {
	// Field names what differs ("status", "current_period_end").
	Field string `json:"field"`
	// LocalValue is the value the local state held.
	LocalValue string `json:"local_value"`
	// ProviderValue is the provider's value.
	ProviderValue string `json:"provider_value"`
	// Corrected: the local state was set to the provider's value.
	Corrected bool `json:"corrected"`
	// SameVersion: found between two states carrying the same provider
	// version (different content under one version), never corrected.
	SameVersion bool `json:"same_version,omitempty"`
}

// Scope is one source account whose resources a reconciliation pass lists,
// and the endpoint whose API key it lists them with.
type Scope struct {
	// Provider of the endpoint.
	Provider string `json:"provider"`
	// Endpoint is the endpoint's slug.
	Endpoint string `json:"endpoint"`
	// Account is the source account listed.
	Account string `json:"account"`
	// Environment is Live or Test.
	Environment string `json:"environment"`
	// WorkspaceID is the workspace the account is linked to.
	WorkspaceID string `json:"workspace_id"`
}
