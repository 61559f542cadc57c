package snapshot

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Name is a path or a link target of a work directory, byte for byte. A name that is valid UTF-8
// is written to a manifest as a JSON string, as manifests always held it; any other is written as
// {"b64": "..."}, because a JSON string would replace its invalid bytes with U+FFFD, so two
// different names could come back as one and a name as another.
type Name string

type rawName struct {
	B64 []byte `json:"b64"`
}

// MarshalJSON keeps the bytes of a name that is not valid UTF-8.
func (n Name) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(n)) {
		return json.Marshal(string(n))
	}
	return json.Marshal(rawName{B64: []byte(n)})
}

// UnmarshalJSON reads either form.
func (n *Name) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		var r rawName
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("decoding a raw name: %w", err)
		}
		*n = Name(r.B64)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*n = Name(s)
	return nil
}

// Printable is a name as a terminal may show it: as it is when every character is printable,
// else quoted with Go's escapes, so no control character, escape sequence or bidirectional
// override in a name the model chose reaches a terminal. Unlike textfmt.Harmless, which keeps
// the newlines of a text, a name is quoted whole when it holds one, so it stays on its line.
func Printable(name string) string {
	for _, r := range name {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			return strconv.Quote(name)
		}
	}
	if name == "" {
		return `""`
	}
	return name
}
