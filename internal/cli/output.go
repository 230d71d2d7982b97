package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// OutputFormat is a --output flag value: table or json.
type OutputFormat string

func (o *OutputFormat) String() string { return string(*o) }

// Type names the values in the flag's help.
func (o *OutputFormat) Type() string { return "table|json" }

// Set accepts table or json.
func (o *OutputFormat) Set(s string) error {
	if s != "table" && s != "json" {
		return fmt.Errorf("must be table or json")
	}
	*o = OutputFormat(s)
	return nil
}

// Render writes rows as a table (header first) or v as indented JSON.
func Render(w io.Writer, format OutputFormat, v any, header []string, rows [][]string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, h := range header {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, h)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		for i, c := range r {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
