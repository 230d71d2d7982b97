// Package records holds the statements of the business records: workspaces
// and their credits (grants, adjustments, the negative-balance policy, the
// operator's corrections and erasure), the subscription projection and the
// feedback alerts, and the lineage reads over them.
package records
