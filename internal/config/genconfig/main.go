// Command genconfig writes what is made from the table of configuration keys
// (internal/config/keys.go): the key table of docs/configuration.md, between its markers, and
// keel.example.yaml. `go generate ./internal/config` runs it; its test fails while either file
// differs from what it would write, so a key changed in the table and not regenerated fails
// `go test ./...`.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/keelrun/keel/internal/config"
)

// The files genconfig writes, relative to the module's root.
const (
	docFile     = "docs/configuration.md"
	exampleFile = "keel.example.yaml"
)

// The markers around the generated table in docFile.
const (
	beginMarker = "<!-- BEGIN keys: generated from internal/config/keys.go by `go generate ./internal/config`; edit the table there -->"
	endMarker   = "<!-- END keys -->"
)

func main() {
	root, err := moduleRoot()
	if err == nil {
		err = write(root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genconfig:", err)
		os.Exit(1)
	}
}

// write regenerates both files under root.
func write(root string) error {
	files, err := generate(root)
	if err != nil {
		return err
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// generate returns what each file should hold, by its name relative to root.
func generate(root string) (map[string]string, error) {
	doc, err := os.ReadFile(filepath.Join(root, docFile))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", docFile, err)
	}
	spliced, err := splice(string(doc), docTable(config.Settings()))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", docFile, err)
	}
	return map[string]string{docFile: spliced, exampleFile: example(config.Settings())}, nil
}

// moduleRoot is the folder above the working directory that holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// splice replaces what lies between the markers of doc with table.
func splice(doc, table string) (string, error) {
	begin := strings.Index(doc, beginMarker)
	end := strings.Index(doc, endMarker)
	if begin < 0 || end < begin {
		return "", fmt.Errorf("no %q ... %q markers around the key table", beginMarker, endMarker)
	}
	return doc[:begin+len(beginMarker)] + "\n" + table + doc[end:], nil
}

// docTable is the markdown table of every key.
func docTable(settings []config.Setting) string {
	var b strings.Builder
	b.WriteString("| key | default | flag | environment | read by | meaning |\n|---|---|---|---|---|---|\n")
	for _, s := range settings {
		cells := []string{"`" + s.Name + "`", defaultCell(s), flagCell(s), envCell(s), readByCell(s), meaningCell(s)}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

func defaultCell(s config.Setting) string {
	if s.DefaultDoc != "" {
		return s.DefaultDoc
	}
	if d := s.DefaultValue(); d != "" {
		return "`" + d + "`"
	}
	return ""
}

func flagCell(s config.Setting) string {
	if s.Flag == "" {
		return ""
	}
	return "`--" + s.Flag + "` (" + s.FlagIn.String() + ")"
}

func envCell(s config.Setting) string {
	if s.Kind == config.Object {
		return "file only"
	}
	return "`" + strings.Join(s.EnvNames(), "`, `") + "`"
}

// readByCell names the programs that read the key, and marks those that require it.
func readByCell(s config.Setting) string {
	var out []string
	for _, p := range []config.Program{config.Worker, config.Starter, config.SlackBot, config.GitHubBot} {
		if s.ReadBy&p == 0 {
			continue
		}
		name := p.String()
		switch {
		case s.Required&p != 0 && s.Unless != "":
			name += " (required unless `" + s.Unless + "`)"
		case s.Required&p != 0:
			name += " (required)"
		}
		out = append(out, name)
	}
	return strings.Join(out, ", ")
}

// meaningCell is the key's Doc, with the values a choice takes when the Doc does not name them all.
func meaningCell(s config.Setting) string {
	if s.Kind != config.Choice || slices.IndexFunc(s.OneOf, func(v string) bool { return !strings.Contains(s.Doc, "`"+v+"`") }) < 0 {
		return s.Doc
	}
	vals := make([]string, len(s.OneOf))
	for i, v := range s.OneOf {
		vals[i] = "`" + v + "`"
	}
	return s.Doc + ": " + strings.Join(vals[:len(vals)-1], ", ") + " or " + vals[len(vals)-1]
}

// exampleHeader opens keel.example.yaml.
const exampleHeader = `# keel.yaml: copy to ~/.config/keel/keel.yaml (or anywhere, with --config or KEEL_CONFIG) and adjust;
# never into a work directory, where the model could rewrite it (the starter and the worker refuse
# that). Every key can also be set as KEEL_<KEY> with dots as underscores (gateway.api_key ->
# KEEL_GATEWAY_API_KEY); flags win over both. docs/configuration.md says what each key means.
# Generated from internal/config/keys.go by ` + "`go generate ./internal/config`" + `: edit the table there.
`

// commentColumn is where the example's comments start, so they line up.
const commentColumn = 33

// example is keel.example.yaml: every key at its default, nested as keel.yaml nests it.
func example(settings []config.Setting) string {
	var b bytes.Buffer
	b.WriteString(exampleHeader)
	var prev []string
	for _, s := range settings {
		parts := strings.Split(s.Name, ".")
		for depth := 0; depth < len(parts)-1; depth++ {
			if depth < len(prev)-1 && prev[depth] == parts[depth] && slices.Equal(prev[:depth], parts[:depth]) {
				continue
			}
			group := strings.Join(parts[:depth+1], ".")
			line(&b, strings.Repeat("  ", depth)+parts[depth]+":", config.GroupHint(group))
		}
		hint := s.Hint
		switch {
		case hint != "":
		case len(s.Env) > 0:
			hint = strings.Join(s.Env, " and ") + " is honoured too"
		case s.Kind == config.Choice:
			hint = strings.Join(s.OneOf, " | ")
		}
		line(&b, strings.Repeat("  ", len(parts)-1)+parts[len(parts)-1]+": "+yamlValue(s), hint)
		prev = parts
	}
	return b.String()
}

// line writes text with its comment (each "\n" of the comment on a line of its own, aligned).
func line(b *bytes.Buffer, text, comment string) {
	if comment == "" {
		b.WriteString(text + "\n")
		return
	}
	for i, c := range strings.Split(comment, "\n") {
		if i > 0 {
			text = ""
		}
		pad := commentColumn - len(text)
		if pad < 1 {
			pad = 1
		}
		b.WriteString(text + strings.Repeat(" ", pad) + "# " + c + "\n")
	}
}

// yamlValue writes the key's default as YAML, quoting a string only where YAML would read it as
// something else.
func yamlValue(s config.Setting) string {
	v := s.DefaultValue()
	switch s.Kind {
	case config.Bool, config.Count, config.MiB, config.List, config.Map, config.Object, config.Price:
		return v
	}
	if plain(v) {
		return v
	}
	return strconv.Quote(v)
}

// plain says whether a string can stand in YAML unquoted and still be read as that string.
func plain(v string) bool {
	if v == "" || strings.TrimSpace(v) != v || strings.ContainsAny(v[:1], "-?:,[]{}#&*!|>'\"%@`") ||
		strings.Contains(v, ": ") || strings.Contains(v, " #") {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~":
		return false
	}
	_, err := strconv.ParseFloat(v, 64)
	return err != nil
}
