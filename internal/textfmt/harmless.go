package textfmt

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Harmless returns s with every character that could command a terminal, or hide or reorder what
// a person reads, shown as a visible escape instead: the escape character and the other C0
// controls and DEL as \x1b, \x07, \x7f (so a sequence such as "\x1b]0;title\x07" shows as those
// characters and does nothing), a lone carriage return as \r, C1 controls (U+0080 to U+009F,
// among them U+009B CSI and U+009D OSC), bidi embeddings, overrides, isolates and marks, and
// the other invisible format characters as \u009b, \u202e, and bytes that are not UTF-8 as \xff.
// Newlines and tabs stay, and "\r\n" becomes "\n". Everything a model or a work directory wrote
// goes through here before Keel prints it to a terminal, Slack or GitHub, so a reply, a tool
// result or a file name can neither move the cursor, clear the screen, retitle the window, nor
// make text read differently from what it is.
func Harmless(s string) string {
	i := strings.IndexFunc(s, needsEscape)
	if i < 0 && utf8.ValidString(s) {
		return s
	}
	if i < 0 {
		i = 0
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\r' && i+1 < len(s) && s[i+1] == '\n':
			// A Windows line end is a line end; the newline follows.
		case r < 0x80 && needsEscape(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case needsEscape(r):
			writeU(&b, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether r is shown as an escape by Harmless.
func needsEscape(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x80:
		return false
	case r <= 0x9f:
		return true // C1 controls
	case r == 0x200c || r == 0x200d:
		// Zero-width non-joiner and joiner shape scripts and join emoji; they command nothing.
		return false
	case r == 0x2028 || r == 0x2029:
		return true // line and paragraph separators: some terminals start a line
	}
	// Format characters: the bidi marks, embeddings, overrides and isolates (U+200E, U+200F,
	// U+202A to U+202E, U+2066 to U+2069, U+061C), zero-width spaces, the BOM, soft hyphens,
	// interlinear annotations and tag characters.
	return unicode.Is(unicode.Cf, r)
}

// writeU writes r as \uXXXX, or \U00XXXXXX above the Basic Multilingual Plane.
func writeU(b *strings.Builder, r rune) {
	if r > 0xffff {
		fmt.Fprintf(b, `\U%08x`, r)
		return
	}
	fmt.Fprintf(b, `\u%04x`, r)
}

// JSONEscaped rewrites JSON text as encoding/json wrote it so that every character Harmless would
// escape is a JSON escape: the encoder already escapes C0 controls (and U+2028, U+2029) but writes
// DEL, C1 controls and bidi and other format characters as raw UTF-8, which a terminal showing
// the jsonl output would obey. The JSON means the same; only its bytes change. Outside strings
// encoding/json writes only ASCII, so every such character is inside a string.
func JSONEscaped(js []byte) []byte {
	if !bytes.ContainsFunc(js, func(r rune) bool { return r != '\n' && r != '\t' && needsEscape(r) }) {
		return js
	}
	out := make([]byte, 0, len(js)+32)
	for i := 0; i < len(js); {
		r, size := utf8.DecodeRune(js[i:])
		if r != '\n' && r != '\t' && needsEscape(r) && !(r == utf8.RuneError && size == 1) {
			if r > 0xffff {
				hi, lo := utf16Pair(r)
				out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		} else {
			out = append(out, js[i:i+size]...)
		}
		i += size
	}
	return out
}

// utf16Pair is r's UTF-16 surrogate pair, which JSON's \u escapes need above U+FFFF.
func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// Preview is text as a one-line prompt or notice shows it: harmless (Harmless), on one line, whole
// when it has at most n characters, else its first and last n/2 characters with
// "…[H of N characters hidden; how]…" between them, so what is hidden is said plainly, with how
// to see it, and the end of a long command is never the part left out.
func Preview(s string, n int, how string) string {
	s = Harmless(s)
	if strings.ContainsAny(s, "\n\t") {
		s = strings.Join(strings.Fields(s), " ")
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	half := n / 2
	return fmt.Sprintf("%s…[%d of %d characters hidden; %s]…%s", string(r[:half]), len(r)-2*half, len(r), how, string(r[len(r)-half:]))
}
