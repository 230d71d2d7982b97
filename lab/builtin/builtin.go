// Package builtin gives the harness (e2e tests, bench, soak, demo) the
// Business of the shipped hookinbox binary: the public App with every
// built-in domain, so the processes they build run exactly what
// cmd/hookinbox runs.
package builtin

import (
	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains"
	"github.com/hookinbox/hookinbox/internal/app"
)

// App is the shipped app (domains.New), configured from the environment.
func App() (*hookinbox.App, error) { return domains.New() }

// Business is App's Business, a fresh copy each call (tests replace
// handlers in theirs).
func Business() (app.Business, error) {
	a, err := App()
	if err != nil {
		return app.Business{}, err
	}
	return app.BusinessOf(a), nil
}

// MustBusiness is Business, panicking on an error (the environment of a
// test or a bench run is the harness's own).
func MustBusiness() app.Business {
	b, err := Business()
	if err != nil {
		panic(err)
	}
	return b
}
