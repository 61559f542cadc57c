package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestReadmeDocumentsEveryEvent: the README's table of --output jsonl events has a row for every
// event kind the starter prints.
func TestReadmeDocumentsEveryEvent(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range contract.EventKinds {
		if !strings.Contains(string(b), "| `"+kind+"` |") {
			t.Errorf("README.md has no row for the %q event", kind)
		}
	}
}

// TestReadmeListsEveryCommand: the README's command table has a row for every starter command.
func TestReadmeListsEveryCommand(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range newRoot(&globals{}).Commands() {
		if !strings.Contains(string(b), "`go run ./starter "+c.Name()) && !strings.Contains(string(b), "(`"+c.Name()+" ") {
			t.Errorf("README.md has no row for starter %s", c.Name())
		}
	}
}
