package config

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// TestTableIsWellFormed: every row of the key table says what the docs and the loader need, and the
// rows can be written as one YAML document (keys that share a parent stay together).
func TestTableIsWellFormed(t *testing.T) {
	flags := map[string]string{}
	closed := map[string]bool{} // parents whose keys ended
	var open []string           // the parents of the previous key
	for _, s := range settings {
		if s.Doc == "" || s.ReadBy == 0 || s.into == nil {
			t.Errorf("%s: needs a Doc, ReadBy and a field", s.Name)
		}
		if s.Required&^s.ReadBy != 0 {
			t.Errorf("%s: required by %s, which does not read it", s.Name, s.Required&^s.ReadBy)
		}
		if s.Unless != "" && byName[s.Unless].Kind != Bool {
			t.Errorf("%s: Unless %q is no Bool key", s.Name, s.Unless)
		}
		if s.Kind == Choice && !slices.Contains(s.OneOf, s.DefaultValue()) {
			t.Errorf("%s: default %q is not one of %v", s.Name, s.DefaultValue(), s.OneOf)
		}
		if s.Kind == Object && s.Shape == "" {
			t.Errorf("%s: an Object needs a Shape for its error", s.Name)
		}
		if (s.Flag == "") != (s.FlagIn == 0) || (s.Flag == "") != (s.FlagUsage == "") {
			t.Errorf("%s: Flag, FlagIn and FlagUsage go together", s.Name)
		}
		if other, dup := flags[s.Flag]; s.Flag != "" && dup {
			t.Errorf("%s: flag --%s already sets %s", s.Name, s.Flag, other)
		}
		flags[s.Flag] = s.Name
		parents := parentsOf(s.Name)
		for _, p := range open {
			if !slices.Contains(parents, p) {
				closed[p] = true
			}
		}
		for _, p := range parents {
			if closed[p] {
				t.Errorf("%s: the keys below %s are not together in the table", s.Name, p)
			}
		}
		open = parents
	}
	if len(byName) != len(settings) {
		t.Errorf("%d rows but %d names: a key is listed twice", len(settings), len(byName))
	}
}

// parentsOf lists the parents of a dotted key: a.b.c has a and a.b.
func parentsOf(key string) []string {
	parts := strings.Split(key, ".")
	var out []string
	for i := 1; i < len(parts); i++ {
		out = append(out, strings.Join(parts[:i], "."))
	}
	return out
}

// TestEveryKeyHasItsVariables: each key is read from KEEL_<KEY> and from the row's own names, and
// KEEL_<KEY> wins.
func TestEveryKeyHasItsVariables(t *testing.T) {
	for _, s := range settings {
		for i, env := range s.EnvNames() {
			t.Run(env, func(t *testing.T) {
				isolate(t)
				t.Setenv(env, "from-"+env)
				if i > 0 {
					t.Setenv(EnvName(s.Name), "from-keel")
				}
				want := "from-" + env
				if i > 0 {
					want = "from-keel"
				}
				if got := newViper().GetString(s.Name); got != want {
					t.Fatalf("%s is %q with %s set, want %q", s.Name, got, env, want)
				}
			})
		}
	}
	if got := EnvName(ToolsLimitsMemoryMB); got != "KEEL_TOOLS_LIMITS_MEMORY_MB" {
		t.Fatalf("EnvName(%s) = %s", ToolsLimitsMemoryMB, got)
	}
}

// TestEveryFlagSetsItsKey: AddFlags registers each key's flag with help naming the key and its
// variable, and a flag the command line sets wins over the environment.
func TestEveryFlagSetsItsKey(t *testing.T) {
	for _, s := range settings {
		if s.Flag == "" {
			continue
		}
		t.Run(s.Flag, func(t *testing.T) {
			isolate(t)
			t.Setenv(EnvName(s.Name), "from-env")
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			AddFlags(fs, s.Name)
			if err := fs.Parse([]string{"--" + s.Flag, "from-flag"}); err != nil {
				t.Fatal(err)
			}
			if help := fs.Lookup(s.Flag).Usage; !strings.Contains(help, s.Name) || !strings.Contains(help, EnvName(s.Name)) {
				t.Fatalf("--%s help %q names neither %s nor %s", s.Flag, help, s.Name, EnvName(s.Name))
			}
			v := newViper()
			applyFlags(v, fs)
			if got := v.GetString(s.Name); got != "from-flag" {
				t.Fatalf("%s is %q after --%s from-flag", s.Name, got, s.Flag)
			}
		})
	}
}

// TestRequiredPerProgram: a key is required only by the programs its row names; the others start
// without it, and the refusal is one line saying how to set the key.
func TestRequiredPerProgram(t *testing.T) {
	slack := map[string]string{
		"KEEL_ESCALATION_SLACK_SIGNING_SECRET": "sec", "KEEL_ESCALATION_SLACK_BOT_TOKEN": "xoxb-1",
		"KEEL_ESCALATION_SLACK_TEAM_ID": "T1", "KEEL_ESCALATION_SLACK_APPROVERS": "U1",
	}
	without := func(m map[string]string, k string) map[string]string {
		out := map[string]string{}
		for key, v := range m {
			if key != k {
				out[key] = v
			}
		}
		return out
	}
	cases := []struct {
		name string
		prog Program
		env  map[string]string
		file string
		err  string // the whole message; "" loads
	}{
		{name: "the worker needs a key", prog: Worker,
			err: "config: gateway.api_key: required to call the model (set KEEL_GATEWAY_API_KEY, or KEEL_GATEWAY_FAKE=true)"},
		{name: "starter run needs a key", prog: Worker | Starter, err: "config: gateway.api_key: required to call the model"},
		{name: "the fake gateway needs none", prog: Worker, env: map[string]string{"KEEL_GATEWAY_FAKE": "true"}},
		{name: "the starter's client commands need none", prog: Starter},
		{name: "nor the variables of declared keys", prog: Starter,
			file: "gateway:\n  keys:\n    x: {env: KEY_UNSET, base_url: http://gw/v1}\n  fallbacks:\n    - {provider: openai, base_url: http://a, model: m, api_key_env: FB_UNSET}\n"},
		{name: "which the worker needs", prog: Worker, env: map[string]string{"KEEL_GATEWAY_API_KEY": "k"},
			file: "gateway:\n  keys:\n    x: {env: KEY_UNSET, base_url: http://gw/v1}\n",
			err:  "config: gateway.keys.x: the environment variable KEY_UNSET (env) is not set"},
		{name: "the Slack bot needs no model key", prog: SlackBot, env: slack},
		{name: "but its secret", prog: SlackBot, env: without(slack, "KEEL_ESCALATION_SLACK_SIGNING_SECRET"),
			err: "config: escalation.slack.signing_secret: required by the Slack bot (set KEEL_ESCALATION_SLACK_SIGNING_SECRET)"},
		{name: "and its team", prog: SlackBot, env: without(slack, "KEEL_ESCALATION_SLACK_TEAM_ID"),
			err: "config: escalation.slack.team_id: required by the Slack bot (set KEEL_ESCALATION_SLACK_TEAM_ID or --team)"},
		{name: "and its approvers", prog: SlackBot, env: without(slack, "KEEL_ESCALATION_SLACK_APPROVERS"),
			err: "config: escalation.slack.approvers: required by the Slack bot (set KEEL_ESCALATION_SLACK_APPROVERS or --approvers): nobody could answer"},
		{name: "which the worker does not", prog: Worker, env: map[string]string{"KEEL_GATEWAY_FAKE": "true"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			isolate(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			file := ""
			if c.file != "" {
				file = write(t, filepath.Join(t.TempDir(), FileName), c.file)
			}
			_, err := LoadFor(c.prog, file, nil, nil)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err != "" && (err == nil || !IsError(err) || !strings.HasPrefix(err.Error(), c.err)):
				t.Fatalf("got %v, want a config error %q", err, c.err)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("more than one line: %q", err)
			}
		})
	}
}

// TestExampleIsTheDefaults: keel.example.yaml sets every key of the table, to its default: loading
// it gives the configuration that loading nothing gives.
func TestExampleIsTheDefaults(t *testing.T) {
	example, err := filepath.Abs(filepath.Join("..", "..", "keel.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	isolate(t)
	v := viper.New()
	v.SetConfigFile(example)
	if err := v.ReadInConfig(); err != nil {
		t.Fatal(err)
	}
	for _, key := range Keys() {
		if !v.InConfig(key) {
			t.Errorf("keel.example.yaml does not set %s", key)
		}
	}
	fromFile, err := Load(example, nil, map[string]any{GatewayFake: true})
	if err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
	none, err := Load("", nil, map[string]any{GatewayFake: true})
	if err != nil {
		t.Fatal(err)
	}
	fromFile.File = ""
	if !reflect.DeepEqual(fromFile, none) {
		t.Fatalf("the example's values are not the defaults:\n%+v\n%+v", fromFile, none)
	}
}

// TestImportsOnlyTheContract: the configuration imports nothing of Keel's but the contract and two
// leaves that import nothing of Keel's (the text formatting, the sandbox's defaults), so a program
// that reads it (the Slack bot, the starter's client commands) links neither the sandbox, whose
// init makes a program a sandbox init, nor the gateway or MCP.
func TestImportsOnlyTheContract(t *testing.T) {
	const module = "github.com/keelrun/keel/"
	leaves := []string{"internal/contract", "internal/textfmt", "internal/tools/sandbox/defaults"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, module) && !slices.Contains(leaves, strings.TrimPrefix(path, module)) {
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
}
