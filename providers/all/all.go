// Package all registers every built-in provider. Import it (for its
// effect) where deliveries are admitted or provider names are resolved;
// adding a provider is its package and one line here.
package all

import (
	"github.com/hookinbox/hookinbox/providers"
	"github.com/hookinbox/hookinbox/providers/github"
	"github.com/hookinbox/hookinbox/providers/shopify"
	"github.com/hookinbox/hookinbox/providers/standard"
	"github.com/hookinbox/hookinbox/providers/stripe"
)

func init() {
	providers.Register(stripe.Provider{})
	providers.Register(github.Provider{})
	providers.Register(standard.Provider{})
	providers.Register(shopify.Provider{})
}
