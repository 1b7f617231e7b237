package cli

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

const (
	cliDoc    = "../../docs/cli.md"
	treeBegin = "<!-- BEGIN command tree: generated from the cobra commands by `go test ./internal/cli -run TestCLIDoc -update` -->\n"
	treeEnd   = "<!-- END command tree -->\n"
)

// commandTree is docs/cli.md's table of every command: path, arguments and Short.
func commandTree(root *cobra.Command) string {
	root.InitDefaultCompletionCmd()
	var b strings.Builder
	b.WriteString("| command | what it does |\n|---|---|\n")
	cell := strings.NewReplacer("|", `\|`) // a pipe would end the table cell
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Deprecated != "" || c.Name() == "help" {
			return
		}
		use := c.CommandPath()
		if _, args, ok := strings.Cut(c.Use, " "); ok {
			use += " " + args
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", cell.Replace(use), cell.Replace(c.Short))
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	for _, c := range root.Commands() {
		walk(c)
	}
	return b.String()
}

// TestCLIDoc: docs/cli.md's command tree is the cobra tree (regenerate with -update), and its
// exit-code table lists every code drover exits with.
func TestCLIDoc(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	before, rest, ok := strings.Cut(doc, treeBegin)
	if !ok {
		t.Fatalf("%s lacks the line %q", cliDoc, treeBegin)
	}
	tree, after, ok := strings.Cut(rest, treeEnd)
	if !ok {
		t.Fatalf("%s lacks the line %q", cliDoc, treeEnd)
	}
	want := commandTree(NewRootCommand())
	if tree != want {
		if *update {
			if err := os.WriteFile(cliDoc, []byte(before+treeBegin+want+treeEnd+after), 0o600); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s's command tree is stale (go test ./internal/cli -run TestCLIDoc -update rewrites it):\n--- got\n%s\n--- want\n%s", cliDoc, tree, want)
	}
	for code, name := range map[int]string{ExitOK: "ExitOK", ExitError: "ExitError", ExitUsage: "ExitUsage", ExitNotReady: "ExitNotReady", ExitRefused: "ExitRefused", ExitDiffFailed: "ExitDiffFailed"} {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^\| %d \|`, code)).MatchString(doc) {
			t.Errorf("%s's exit-code table lacks a row for %d (%s)", cliDoc, code, name)
		}
	}
}
