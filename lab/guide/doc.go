// Package guide runs the shell blocks of a markdown guide as a reader
// would: in order, as written, in one terminal whose state (the working
// directory, variables, exports) carries from line to line and from block
// to block. The guide tests (the README's "Try it", docs/forward-routes.md
// here; docs/write-your-own-handler.md in lab/release) use it, so a guide
// whose command no longer works fails make test.
//
// # Blocks
//
// A block is a fenced code block whose info string is sh, bash or shell.
// Other fences (json, go, plain text) are not run. Each block records its
// file, the line of its opening fence and the headings it is under.
//
// # Markers
//
// A block with no marker runs as written. A marker is an HTML comment on
// its own line, before the block's fence with nothing but blank lines
// between (a reader of the rendered page does not see it):
//
//	<!-- guide: KIND key=value key="a value with spaces" -->
//
// KIND is one of
//
//   - run: the default, written only to give the block a timeout.
//   - skip: the block is not run. reason= (required) says why: a
//     production-only host, a step that runs in a checkout the test stands
//     in for.
//   - background: a step the reader starts and stops with Ctrl-C. It is
//     started in the background (in its own process group, with the
//     terminal's state), its output kept in a file; the guide goes on once
//     its output so far matches until= (a Go regexp, ^ and $ at each
//     line) and every URL in ready= (a
//     space-separated list) answers 2xx, within timeout=. It is stopped
//     (SIGINT to its process group, as Ctrl-C does, then SIGKILL) when the
//     guide ends. reason= is required.
//   - another-terminal: a step the reader runs in a terminal of its own and
//     leaves running (make run). Run as background is.
//
// Attributes: reason (any text but a double quote), timeout (a Go
// duration: the block's limit for run, the wait for readiness for
// background and another-terminal), until, ready. A kind or attribute not
// listed, an attribute the kind does not take, a background step with
// neither until nor ready, or a marker not followed by a shell block, is
// an error: Parse fails on it, so a typo in a marker fails make test
// (TestEveryMarkerInTheDocsParses reads every file of docs/ and the
// README). A line inside a block ending in a "# guide:" comment is an
// error too: a line that runs otherwise than its block goes in a block of
// its own.
//
// # Running
//
// A Session is one bash process (set -euo pipefail) started in the
// directory and with the environment the test gives. Each block is written
// to a file and sourced (stdin from /dev/null), under a per-block timeout;
// its output is kept and, on failure, returned with the block's file:line
// and the line of the command that failed. A failed command ends the
// session, as set -e ends a script.
package guide
