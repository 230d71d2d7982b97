// Command slack-events is a team's whole hookinbox deployment with a
// provider of its own: Slack's Events API, a handler keeping one row per
// message. Run it as the hookinbox binary is run (`slack-events dev`,
// `slack-events webhook`, `slack-events worker`, `slack-events migrate`, …)
// and register the endpoint Slack posts to with
// `slack-events endpoints add --provider slack --secret SIGNING_SECRET …`.
package main

import "example.com/slack-events/messages"

func main() { messages.New().Main() }
