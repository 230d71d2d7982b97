package command

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/secretbox"
)

func newSecretsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "The key that seals the database's secrets: rotate it, see what it seals, make a new one",
		Long: `Signing secrets, provider API keys and destination secrets are stored sealed (AES-256-GCM
envelope encryption) under a key kept outside the database: HOOKINBOX_SECRETS_KEY (base64 of 32
random bytes) or HOOKINBOX_SECRETS_KEY_FILE (lines of id:base64key; the first seals, the others
only open). To rotate: put a new key first in the key file, keep the old one below it, restart
the services, run 'secrets rotate-key', then remove the old line. See docs/security.md.`,
	}
	cmd.AddCommand(newSecretsRotateCmd(), newSecretsStatusCmd(), newSecretsGenerateCmd())
	return cmd
}

func newSecretsRotateCmd() *cobra.Command {
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "rotate-key",
		Short: "Re-encrypt every secret under the keyring's current key (idempotent, resumable)",
		Long: `Re-encrypt every sealed secret not yet under the current key (the first of the key file) and seal
any still kept in a plain column, in short transactions, beside running services. Interrupted, it
resumes where it stopped when run again; finished, it finds nothing to do. A value sealed under a
key the keyring no longer holds stops it with an error naming that key: nothing is lost.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStoreOps(cmd, func(env opsEnv) error {
				start := time.Now()
				// Audited as the login name: the command has no --by.
				res, err := env.svc.Reseal(cmd.Context(), ops.Actor{Name: defaultActor()}, "")
				if err != nil {
					return asUsage(err)
				}
				var rows [][]string
				for _, c := range res.Columns {
					rows = append(rows, []string{c.Column, strconv.Itoa(c.Rekeyed), strconv.Itoa(c.Sealed)})
				}
				if err := cli.Render(env.out, format, map[string]any{"key_id": res.KeyID, "columns": res.Columns},
					[]string{"COLUMN", "RE-ENCRYPTED", "PLAIN SEALED"}, rows); err != nil {
					return err
				}
				if format.String() == "table" {
					fmt.Fprintf(env.out, "every secret is sealed under key %s (%s); keys below it in the key file may now be removed\n",
						res.KeyID, time.Since(start).Round(time.Millisecond))
				}
				return nil
			})
		},
	}
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

func newSecretsStatusCmd() *cobra.Command {
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Count the stored secrets by column and by the key that sealed them (\"plain\": not sealed yet)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStoreOps(cmd, func(env opsEnv) error {
				v, err := env.svc.SecretStatus(cmd.Context())
				if err != nil {
					return err
				}
				current := orDefault(v.CurrentKeyID, "(none configured)")
				var rows [][]string
				for _, c := range v.Counts {
					id := c.KeyID
					switch {
					case id == "":
						id = "plain"
					case slices.Contains(v.Missing, id):
						id += " (not in the keyring!)"
					case id == current:
						id += " (current)"
					}
					rows = append(rows, []string{c.Column, id, strconv.Itoa(c.Count)})
				}
				return cli.Render(env.out, format, map[string]any{"current_key_id": current, "counts": v.Counts},
					[]string{"COLUMN", "KEY", "COUNT"}, rows)
			})
		},
	}
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

func newSecretsGenerateCmd() *cobra.Command {
	var id, file string
	var bare bool
	cmd := &cobra.Command{
		Use:   "generate-key [--id ID | --bare | --file PATH]",
		Short: "Make a new random key: a key file line id:base64key, the base64 for HOOKINBOX_SECRETS_KEY (--bare), or a key file (--file)",
		Long: `Print a new random key as a key file line (id:base64key; add it as the first line of the key file to
rotate), or with --bare as the base64 HOOKINBOX_SECRETS_KEY takes. With --file PATH, write a new key
file there (mode 0600) unless one exists: an existing key file is never rewritten (docker-compose.yml
runs this once before the first migration).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file != "" {
				if id == "" {
					id = "k1"
				}
				created, err := secretbox.CreateKeyFile(file, id)
				if err != nil {
					return err
				}
				if created {
					fmt.Fprintf(cmd.OutOrStdout(), "secrets key file %s created (key %s)\n", file, id)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "secrets key file %s exists: kept as it is\n", file)
				}
				return nil
			}
			if bare {
				fmt.Fprintln(cmd.OutOrStdout(), secretbox.GenerateKey())
				return nil
			}
			if id == "" {
				id = "k" + time.Now().UTC().Format("20060102")
			}
			if _, err := secretbox.New(secretbox.Key{ID: id, Secret: make([]byte, secretbox.KeySize)}); err != nil {
				return cli.Usagef("--id: %v", err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), secretbox.GenerateKeyLine(id))
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "key id (default k<YYYYMMDD>)")
	cmd.Flags().BoolVar(&bare, "bare", false, "only the base64 key, for HOOKINBOX_SECRETS_KEY")
	cmd.Flags().StringVar(&file, "file", "", "write a new key file here unless one exists")
	return cmd
}
