// Package cli is the command-line plumbing both binaries share, hookinbox
// (the service and its operator commands) and hookinbox-lab (simulator,
// soak, bench, demo): how a command's error becomes an exit status, and
// how a listing is printed as a table or JSON. It holds no command and no
// connection.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/spf13/cobra"
)

// Main runs root and ends the process with its exit status: 0, the
// status an ExitCode carries, 2 for a usage error, 1 for any other error
// (printed to stderr). A usage error is a UsageError, or any error cobra
// returns before a command's own code runs: an unknown command or flag, a
// missing or extra argument, a missing required flag.
func Main(ctx context.Context, root *cobra.Command) {
	os.Exit(Run(ctx, root, os.Stderr))
}

// Run is Main without the exit: it returns the exit status, printing the
// error to errOut.
func Run(ctx context.Context, root *cobra.Command, errOut io.Writer) int {
	var started atomic.Bool
	markStarted(root, &started)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	var ec ExitCode
	if errors.As(err, &ec) {
		return ec.Code
	}
	fmt.Fprintln(errOut, "error:", err)
	var ue UsageError
	if errors.As(err, &ue) || !started.Load() {
		if cmd != nil {
			fmt.Fprintf(errOut, "run '%s --help' for usage\n", cmd.CommandPath())
		}
		return 2
	}
	return 1
}

// markStarted wraps every command's RunE so that Run can tell an error of
// the command's own code from one cobra found in the command line.
func markStarted(c *cobra.Command, started *atomic.Bool) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			started.Store(true)
			return run(cmd, args)
		}
	}
	for _, sub := range c.Commands() {
		markStarted(sub, started)
	}
}

// WrapErrors applies fn to the error of every command's RunE under c (to
// turn a library's bad-input errors into UsageErrors, say).
func WrapErrors(c *cobra.Command, fn func(error) error) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			return fn(run(cmd, args))
		}
	}
	for _, sub := range c.Commands() {
		WrapErrors(sub, fn)
	}
}

// ExitCode ends the process with a status and no message (the command
// already printed what it had to say).
type ExitCode struct{ Code int }

func (e ExitCode) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// UsageError is a mistake in the command line (exit status 2).
type UsageError struct{ Msg string }

func (u UsageError) Error() string { return u.Msg }

// Usagef formats a UsageError.
func Usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }
