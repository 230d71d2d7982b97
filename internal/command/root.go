package command

import (
	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
)

// Program is the binary a command tree is: hookinbox's own, or a team's
// (its name and version; hookinbox's version beside it).
type Program struct {
	// Name is the program's name in usage lines, errors and --version
	// (default hookinbox).
	Name string
	// Version is the program's version (default: the main module's,
	// version()).
	Version string
	// Hookinbox is the version of the hookinbox module the binary is built
	// on; shown beside Version when the program is not hookinbox.
	Hookinbox string
}

func (p Program) withDefaults() Program {
	if p.Name == "" {
		p.Name = "hookinbox"
	}
	if p.Version == "" {
		p.Version = version()
	}
	return p
}

// VersionLine is what --version prints after the name: the version and,
// for a team's program, hookinbox's.
func (p Program) VersionLine() string {
	p = p.withDefaults()
	if p.Name == "hookinbox" || p.Hookinbox == "" {
		return p.Version
	}
	return p.Version + " (hookinbox " + p.Hookinbox + ")"
}

// NewRootCmd is the whole command tree of the hookinbox binary.
func NewRootCmd() *cobra.Command { return NewRootCmdFor(Program{}) }

// NewRootCmdFor is the command tree of program p.
func NewRootCmdFor(p Program) *cobra.Command {
	p = p.withDefaults()
	root := &cobra.Command{
		Use:   p.Name,
		Short: "Receive webhooks and turn each into its business effect exactly once",
		Long: `hookinbox receives webhooks (Stripe, GitHub, Standard Webhooks, Shopify), commits each to a
PostgreSQL inbox before answering, and hands it to one Temporal workflow per resource.

Configuration comes from environment variables (see README.md, "Configuration");
the defaults point at the local stack that 'hookinbox dev' (make run) starts.`,
		Version:       p.VersionLine(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.AddCommand(
		newWebhookCmd(),
		newWorkerCmd(),
		newConsoleCmd(),
		newDevCmd(),
		newMigrateCmd(),
		newDBCmd(),
		newEndpointsCmd(),
		newOutboxCmd(),
		newWorkspacesCmd(),
		newInboxCmd(),
		newQuarantineCmd(),
		newReplayCmd(),
		newSendCmd(),
		newRoutesCmd(),
		newNotificationsCmd(),
		newExplainCmd(),
		newTokensCmd(),
		newStatusCmd(),
		newReconcileCmd(),
		newSchedulesCmd(),
		newSecretsCmd(),
		newVersionCmd(p),
	)
	cli.WrapErrors(root, asUsage)
	return root
}
