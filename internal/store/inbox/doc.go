// Package inbox holds the statements of the inbox and its quarantine: the
// intake's insert (alone or group-committed), loading and completing a
// resource's pending rows, the operator's listings, replays and quarantine
// resolutions, the lineage of deliveries and the retention of both tables.
// Only internal/admission inserts inbox rows.
package inbox
