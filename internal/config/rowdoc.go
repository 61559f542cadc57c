package config

import (
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// The documentation of the keys whose values are rows elsewhere (contract.ProviderRows,
// contract.Channels) is made from those rows, so a new provider or channel appears in the docs,
// the help and the example without an edit here.

// providersDoc names every provider with what it speaks: "`openai` (…), … or `anthropic` (Messages)".
func providersDoc() string {
	var items []string
	for _, p := range contract.ProviderRows {
		items = append(items, "`"+p.Name+"` ("+p.Doc+")")
	}
	return orList(items)
}

// defaultModelsDoc names each default model with the providers that get it:
// "`gpt-4o-mini` (openai, openai-responses), `claude-sonnet-4-5` (anthropic)".
func defaultModelsDoc() string {
	var models []string
	users := map[string][]string{}
	for _, p := range contract.ProviderRows {
		if users[p.DefaultModel] == nil {
			models = append(models, p.DefaultModel)
		}
		users[p.DefaultModel] = append(users[p.DefaultModel], p.Name)
	}
	items := make([]string, 0, len(models))
	for _, m := range models {
		items = append(items, "`"+m+"` ("+strings.Join(users[m], ", ")+")")
	}
	return strings.Join(items, ", ")
}

// codeList writes names as "`a`, `b`, `c`".
func codeList(names []string) string {
	return "`" + strings.Join(names, "`, `") + "`"
}
