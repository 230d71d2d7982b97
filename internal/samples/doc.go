// Package samples holds the built-in example deliveries of `hookinbox
// send`: a few real payloads per provider (GitHub's from
// @octokit/webhooks-examples, Stripe's from stripe-mock's fixtures, each
// with its licence; Standard Webhooks' and Shopify's our own), embedded
// from payloads/, and how one delivery is made from one of them: fresh ids
// for each event (Stripe's evt_ id, GitHub's delivery GUID and the body's
// new commit, issue or hook, a Standard Webhooks webhook-id, a Shopify
// event id and order), the endpoint's account written where its provider
// reads it, its environment (Stripe's livemode), and the headers the
// provider sends beside the signature.
//
// It builds bytes and headers only: it never signs (providers.Signer does,
// with a secret ops opens), never sends and never touches the database.
package samples
