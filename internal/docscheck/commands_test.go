package docscheck_test

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/command"
	"github.com/hookinbox/hookinbox/internal/docscheck"
)

// TestEveryDocumentedHookinboxCommandParses: every hookinbox command line
// of the README, docs/ and the CHANGELOG's current release, and every
// Example of the command tree, is parsed by the real tree (see
// docscheck.CheckCommand). The hookinbox-lab lines are checked in
// cmd/hookinbox-lab, where its tree is.
func TestEveryDocumentedHookinboxCommandParses(t *testing.T) {
	t.Parallel()
	lines, problems, err := docscheck.DocumentedCommands(root(t), "hookinbox")
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Greater(t, len(lines), 100, "the docs hold many hookinbox lines")
	examples, problems := docscheck.ExampleCommands(command.NewRootCmd())
	require.Empty(t, problems)
	require.Greater(t, len(examples), 10)
	trees := map[string]func() *cobra.Command{"hookinbox": command.NewRootCmd}
	bad := docscheck.CheckCommands(trees, append(lines, examples...))
	require.Empty(t, bad, "\n%s", strings.Join(bad, "\n"))
}

// hookinboxTrees is the tree the hookinbox lines are parsed by.
var hookinboxTrees = map[string]func() *cobra.Command{"hookinbox": command.NewRootCmd}

// check runs the command check on one Markdown text.
func check(t *testing.T, doc string) []string {
	t.Helper()
	lines, problems := docscheck.MarkdownCommands("doc.md", []byte(doc), "hookinbox")
	require.Empty(t, problems)
	return docscheck.CheckCommands(hookinboxTrees, lines)
}

// TestTheCommandCheckReportsEachKindOfMistake: on the real command tree,
// each kind of mistake in a shell block, a synopsis block or a code span
// is reported, with its line, and what is right is not.
func TestTheCommandCheckReportsEachKindOfMistake(t *testing.T) {
	t.Parallel()
	doc := "# Doc\n\n" +
		"```sh\n" +
		"B=.tools/bin/hookinbox\n" +
		"$B explain event KEY\n" + // 5: fine: KEY is one argument
		"$B explain --kind event KEY\n" + // 6: unknown flag
		"hookinbox endpoints lnk --slug S --account A --workspace W\n" + // 7: unknown command
		"hookinbox explain event\n" + // 8: one positional argument short
		"hookinbox tokens create --role viewer\n" + // 9: --name is required
		"hookinbox inbox list --limit LIMIT --output json | jq length   # fine: LIMIT stands for a number\n" + // 10
		"hookinbox inbox list --limit ten\n" + // 11: not a number
		"hookinbox endpoints\n" + // 12: a group needs a subcommand
		"```\n\n" +
		"```text\n" +
		"hookinbox endpoints list [--output table|json] [--bogus]\n" + // 16: one variant has an unknown flag
		"hookinbox inbox list [--status S[,S…]]\n" + // 17: fine
		"\n  hookinbox this is a diagram, not a command\n" + // 19: indented: not a command
		"```\n" +
		"A name: `hookinbox inbox list|show`, `hookinbox explain`; a group's any subcommand: `hookinbox endpoints …`;\n" + // 21
		"a command: `hookinbox explain event <key>`, `hookinbox inbox show --payload`, `hookinbox workspaces\n" + // 22: show needs its argument
		"erase --workspace W`.\n" // 23: --reason is required, the span runs over the line break
	require.Equal(t, []string{
		`doc.md:6: hookinbox explain --kind event KEY: hookinbox explain: unknown flag: --kind`,
		`doc.md:7: hookinbox endpoints lnk --slug S --account A --workspace W: unknown command "lnk" for "hookinbox endpoints"`,
		`doc.md:8: hookinbox explain event: hookinbox explain: accepts 2 arg(s), received 1`,
		`doc.md:9: hookinbox tokens create --role viewer: hookinbox tokens create: required flag(s) "name" not set`,
		`doc.md:11: hookinbox inbox list --limit ten: hookinbox inbox list: invalid argument "ten" for "--limit" flag: strconv.ParseInt: parsing "ten": invalid syntax`,
		`doc.md:12: hookinbox endpoints: hookinbox endpoints is a group: it needs one of its subcommands`,
		`doc.md:16: hookinbox endpoints list --bogus: hookinbox endpoints list: unknown flag: --bogus`,
		`doc.md:16: hookinbox endpoints list --output table --bogus: hookinbox endpoints list: unknown flag: --bogus`,
		`doc.md:16: hookinbox endpoints list --output json --bogus: hookinbox endpoints list: unknown flag: --bogus`,
		`doc.md:22: hookinbox inbox show --payload: hookinbox inbox show: accepts 1 arg(s), received 0`,
		`doc.md:22: hookinbox workspaces erase --workspace W: hookinbox workspaces erase: required flag(s) "reason" not set`,
	}, check(t, doc))
}

// TestTheCommandCheckFailsOnTheRealDocsWithPlantedMistakes: the real
// README and forward-routes guide, each with one planted mistake (a wrong
// flag, an unknown command, a missing argument), fail the check at that
// line, and only there.
func TestTheCommandCheckFailsOnTheRealDocsWithPlantedMistakes(t *testing.T) {
	t.Parallel()
	for _, plant := range []struct{ file, old, new, want string }{
		{"README.md", "--event checkout.session.completed --count 3 --duplicate-rate", "--event checkout.session.completed --count 3 --duplicate-ratio", "unknown flag: --duplicate-ratio"},
		{"docs/forward-routes.md", "$B routes add --name billing", "$B route add --name billing", `unknown command "route" for "hookinbox"`},
		{"README.md", "hookinbox endpoints link --slug S --account ACCOUNT --workspace WORKSPACE", "hookinbox endpoints link --slug S --workspace WORKSPACE", `required flag(s) "account" not set`},
	} {
		doc := string(readRepo(t, plant.file))
		require.Empty(t, check(t, doc), plant.file)
		require.Equal(t, 1, strings.Count(doc, plant.old), plant.old)
		got := check(t, strings.Replace(doc, plant.old, plant.new, 1))
		require.Len(t, got, 1, "%q", got)
		require.Contains(t, got[0], plant.want)
	}
}
