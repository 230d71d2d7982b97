// Package endpoints holds the statements of endpoints and their secrets:
// registration, signing secrets and API keys sealed at rest, account links,
// the lookups the intake and the worker make, and the bulk passes that
// seal and re-seal every secret column.
package endpoints
