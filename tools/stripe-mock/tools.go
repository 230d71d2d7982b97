//go:build tools

// Package tools pins stripe-mock, Stripe's mock of its API built from its
// OpenAPI specification and fixtures, which the Stripe client's tests run
// on loopback (providers/stripe). Separate module for the same reason as
// tools/temporal.
package tools

import _ "github.com/stripe/stripe-mock"
