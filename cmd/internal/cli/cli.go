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
	"os"

	"github.com/spf13/cobra"
)

// Main runs root and ends the process with its exit status: 0, the
// status an ExitCode carries, 2 for a UsageError, 1 for any other error
// (printed to stderr).
func Main(ctx context.Context, root *cobra.Command) {
	err := root.ExecuteContext(ctx)
	if err == nil {
		return
	}
	var ec ExitCode
	if errors.As(err, &ec) {
		os.Exit(ec.Code)
	}
	fmt.Fprintln(os.Stderr, "error:", err)
	var ue UsageError
	if errors.As(err, &ue) {
		os.Exit(2)
	}
	os.Exit(1)
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
