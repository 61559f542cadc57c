package textfmt

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHarmless(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain", "go test ./...", "go test ./..."},
		{"newlines and tabs kept", "a\tb\nc\n", "a\tb\nc\n"},
		{"windows line ends", "a\r\nb\r\n", "a\nb\n"},
		{"lone carriage return", "ok\r  ✓ forged", `ok\x0d  ✓ forged`},
		{"colour", "\x1b[31mFAIL\x1b[0m", `\x1b[31mFAIL\x1b[0m`},
		{"clear screen", "a\x1b[2J\x1b[Hb", `a\x1b[2J\x1b[Hb`},
		{"OSC title ended by BEL", "\x1b]0;pwned\x07ok", `\x1b]0;pwned\x07ok`},
		{"OSC ended by ST", "\x1b]2;x\x1b\\ok", `\x1b]2;x\x1b\ok`},
		{"OSC 8 hyperlink", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", `\x1b]8;;http://evil\x1b\click\x1b]8;;\x1b\`},
		{"DCS", "\x1bPq#0\x1b\\", `\x1bPq#0\x1b\`},
		{"lone Esc at the end", "a\x1b", `a\x1b`},
		{"NUL, backspace, bell, DEL", "a\x00b\bc\x07d\x7f", `a\x00b\x08c\x07d\x7f`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"C1 OSC and ST", "\u009d0;pwned\u009cok", `\u009d0;pwned\u009cok`},
		{"C1 NEL and DCS", "\u0085\u0090", `\u0085\u0090`},
		{"bidi override", "evil\u202eexe.txt", `evil\u202eexe.txt`},
		{"bidi embeddings", "\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
		{"bidi isolates", "\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"bidi marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`},
		{"zero-width space and BOM", "a\u200bb\ufeff", `a\u200bb\ufeff`},
		{"line separators", "a\u2028b\u2029", `a\u2028b\u2029`},
		{"tag characters", "a\U000e0041", `a\U000e0041`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"emoji joiner and accents kept", "👩‍💻 café ✓ → ⠋", "👩‍💻 café ✓ → ⠋"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Harmless(c.in)
			if got != c.want {
				t.Fatalf("Harmless(%q) = %q, want %q", c.in, got, c.want)
			}
			if !utf8.ValidString(got) || strings.ContainsFunc(got, func(r rune) bool { return r != '\n' && r != '\t' && needsEscape(r) }) {
				t.Fatalf("Harmless(%q) = %q still holds a character it escapes", c.in, got)
			}
			if Harmless(got) != got {
				t.Fatalf("Harmless is not stable on %q", got)
			}
		})
	}
}

// TestJSONEscaped: what encoding/json leaves raw (DEL, C1, bidi, format characters) becomes a
// \u escape, the JSON still decodes to the same text, and no raw control or bidi byte is left.
func TestJSONEscaped(t *testing.T) {
	texts := []string{
		"plain ✓ text",
		"\x1b]0;pwned\x07 \x1b[2J",
		"a\u009b2J \u009d0;x\u009c \u0085",
		"evil\u202eexe \u2066iso\u2069 \u200e\u061c",
		"\x7f del \u200b zwsp \ufeff \u2028 \U000e0041 tag",
		"bad \xff utf-8",
	}
	for _, text := range texts {
		raw, err := json.Marshal(map[string]string{"text": text, text: "key"})
		if err != nil {
			t.Fatal(err)
		}
		got := JSONEscaped(raw)
		var back map[string]string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("JSONEscaped(%s) = %s does not decode: %v", raw, got, err)
		}
		var want map[string]string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if back["text"] != want["text"] || back[want["text"]] != "key" {
			t.Fatalf("JSONEscaped(%s) = %s decodes to %q, want %q", raw, got, back, want)
		}
		if strings.ContainsFunc(string(got), func(r rune) bool { return needsEscape(r) }) || !utf8.Valid(got) {
			t.Fatalf("JSONEscaped(%s) = %q still holds a raw control, bidi or format character", raw, got)
		}
	}
}
