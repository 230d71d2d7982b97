package command

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
)

// secretFlags are the ways a command takes a secret: --NAME on the command
// line (kept for compatibility, but visible in the process list and the
// shell's history), or --NAME-file, --NAME-env and --NAME-stdin, which
// keep it off argv.
type secretFlags struct {
	name   string
	repeat bool
	values []string
	files  []string
	envs   []string
	stdin  bool
}

// addSecretFlags registers --NAME, --NAME-file, --NAME-env and --NAME-stdin
// on cmd; repeat allows several secrets (each flag repeatable, one per stdin
// line).
func addSecretFlags(cmd *cobra.Command, name, what string, repeat bool) *secretFlags {
	f := cmd.Flags()
	s := &secretFlags{name: name, repeat: repeat}
	if repeat {
		f.StringArrayVar(&s.values, name, nil, what+" on the command line (visible in ps and shell history: prefer --"+name+"-file, -env or -stdin); repeatable")
		f.StringArrayVar(&s.files, name+"-file", nil, "read the "+what+" from this file (surrounding whitespace trimmed); repeatable")
		f.StringArrayVar(&s.envs, name+"-env", nil, "read the "+what+" from this environment variable; repeatable")
		f.BoolVar(&s.stdin, name+"-stdin", false, "read the "+what+"s from standard input, one per line")
		return s
	}
	s.values, s.files, s.envs = make([]string, 1), make([]string, 1), make([]string, 1)
	f.StringVar(&s.values[0], name, "", what+" on the command line (visible in ps and shell history: prefer --"+name+"-file, -env or -stdin)")
	f.StringVar(&s.files[0], name+"-file", "", "read the "+what+" from this file (surrounding whitespace trimmed)")
	f.StringVar(&s.envs[0], name+"-env", "", "read the "+what+" from this environment variable")
	f.BoolVar(&s.stdin, name+"-stdin", false, "read the "+what+" from standard input")
	return s
}

// given reports whether any of the flags was used.
func (s *secretFlags) given() bool { return len(s.collectNames()) > 0 || s.stdin }

func (s *secretFlags) collectNames() []string {
	var out []string
	for _, list := range [][]string{s.values, s.files, s.envs} {
		for _, v := range list {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// read returns the secrets given, in the order: --NAME, files, variables,
// stdin. A secret on argv draws a warning on warn.
func (s *secretFlags) read(cmd *cobra.Command, warn io.Writer) ([]string, error) {
	var out []string
	for _, v := range s.values {
		if v != "" {
			out = append(out, v)
			fmt.Fprintf(warn, "warning: --%s puts the secret in the process list and shell history; prefer --%s-file, --%s-env or --%s-stdin\n",
				s.name, s.name, s.name, s.name)
		}
	}
	for _, p := range s.files {
		if p == "" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, cli.Usagef("--%s-file: %v", s.name, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return nil, cli.Usagef("--%s-file %s is empty", s.name, p)
		}
		out = append(out, v)
	}
	for _, name := range s.envs {
		if name == "" {
			continue
		}
		// An operator-named variable holding one secret, read at their
		// request: not configuration (internal/config reads that).
		v := strings.TrimSpace(os.Getenv(name))
		if v == "" {
			return nil, cli.Usagef("--%s-env: $%s is empty or not set", s.name, name)
		}
		out = append(out, v)
	}
	if s.stdin {
		sc := bufio.NewScanner(cmd.InOrStdin())
		n := 0
		for sc.Scan() {
			if v := strings.TrimSpace(sc.Text()); v != "" {
				out = append(out, v)
				n++
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("--%s-stdin: %w", s.name, err)
		}
		if n == 0 {
			return nil, cli.Usagef("--%s-stdin: nothing on standard input", s.name)
		}
	}
	if !s.repeat && len(out) > 1 {
		return nil, cli.Usagef("give one of --%s, --%s-file, --%s-env or --%s-stdin", s.name, s.name, s.name, s.name)
	}
	return out, nil
}

// one reads a single optional secret ("" when none was given).
func (s *secretFlags) one(cmd *cobra.Command, warn io.Writer) (string, error) {
	vs, err := s.read(cmd, warn)
	if err != nil || len(vs) == 0 {
		return "", err
	}
	return vs[0], nil
}

// bothStdin refuses two secrets read from the same standard input.
func bothStdin(a, b *secretFlags) error {
	if a.stdin && b.stdin {
		return cli.Usagef("--%s-stdin and --%s-stdin cannot both read standard input", a.name, b.name)
	}
	return nil
}
