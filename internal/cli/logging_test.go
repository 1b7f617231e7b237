package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestVerbosityThroughMain: "drover version -v 2" runs (the 2 is the level, not an argument).
func TestVerbosityThroughMain(t *testing.T) {
	if code := Main([]string{"version", "--client", "-v", "2"}); code != ExitOK {
		t.Errorf("drover version -v 2: exit %d, want %d", code, ExitOK)
	}
	if got := verbosityArgs([]string{"get", "-v", "3", "--", "-v", "4"}); strings.Join(got, " ") != "get -v=3 -- -v 4" {
		t.Errorf("verbosityArgs: %q", got)
	}
}

// TestLogFlags: --log-format and -v shape the logs on stderr; the zap flags exist only on the
// long-running commands and win over --log-format.
func TestLogFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cmd     string
		args    []string
		json    bool
		debug   bool // a V(1) line is logged
		v2      bool // a V(2) line is logged
		usage   bool
		noFlags bool // parsing fails: unknown flag
		capped  bool // a V(7) line is logged, a V(8) one (client-go's request bodies) is not
		quiet   bool // not even an info line is logged (errors only)
	}{
		{name: "demo logs errors only", cmd: "server", args: []string{"--demo"}, quiet: true},
		{name: "demo with -v", cmd: "server", args: []string{"--demo", "-v"}, debug: true},
		{name: "default text info", cmd: "server"},
		{name: "json", cmd: "server", args: []string{"--log-format", "json"}, json: true},
		{name: "-v alone is debug", cmd: "agent", args: []string{"-v"}, debug: true},
		{name: "-v=2", cmd: "server", args: []string{"-v=2", "--log-format=json"}, json: true, debug: true, v2: true},
		{name: "-v 2 as kubectl", cmd: "cluster list", args: []string{"-v", "2"}, debug: true, v2: true},
		{name: "--v 1", cmd: "cluster list", args: []string{"--v", "1"}, debug: true},
		{name: "deprecated --verbose", cmd: "server", args: []string{"--verbose"}, debug: true},
		{name: "zap flags win", cmd: "server", args: []string{"--log-format", "text", "--zap-encoder", "json", "--zap-log-level", "debug"}, json: true, debug: true},
		{name: "zap flags on agent", cmd: "agent", args: []string{"--zap-log-level", "debug"}, debug: true},
		{name: "no zap flags on cluster list", cmd: "cluster list", args: []string{"--zap-log-level", "debug"}, noFlags: true},
		{name: "bad format", cmd: "cluster list", args: []string{"--log-format", "xml"}, usage: true},
		{name: "-v=10 is capped", cmd: "server", args: []string{"-v=10"}, debug: true, v2: true, capped: true},
		{name: "--zap-log-level=10 is capped", cmd: "agent", args: []string{"--zap-log-level=10"}, debug: true, v2: true, capped: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root, _, logs := newRootWithLogs()
			cmd, _, err := root.Find(strings.Fields(tt.cmd))
			if err != nil {
				t.Fatal(err)
			}
			err = cmd.ParseFlags(verbosityArgs(tt.args))
			if tt.noFlags {
				if err == nil {
					t.Fatal("zap flag accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			log, err := logs.logger(cmd, &buf)
			if tt.usage {
				if ExitCode(err) != ExitUsage {
					t.Fatalf("err %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log.Info("info line")
			log.V(1).Info("debug line")
			log.V(2).Info("v2 line")
			log.V(7).Info("v7 line")
			log.V(8).Info("v8 line")
			out := buf.String()
			if strings.Contains(out, "v7 line") != tt.capped || strings.Contains(out, "v8 line") || log.V(8).Enabled() {
				t.Errorf("logged:\n%s\nwant V(7) %v and never V(8) (enabled: %t)", out, tt.capped, log.V(8).Enabled())
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			for _, l := range lines {
				var m map[string]any
				isJSON := json.Unmarshal([]byte(l), &m) == nil
				if isJSON != tt.json {
					t.Errorf("line %q: JSON %v, want %v", l, isJSON, tt.json)
				}
			}
			if tt.quiet {
				if out != "" {
					t.Errorf("logged:\n%s\nwant nothing below error level", out)
				}
				return
			}
			if !strings.Contains(out, "info line") || strings.Contains(out, "debug line") != tt.debug || strings.Contains(out, "v2 line") != tt.v2 {
				t.Errorf("logged:\n%s\nwant debug %v, v2 %v", out, tt.debug, tt.v2)
			}
		})
	}
}
