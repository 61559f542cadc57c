package tui

// Key is one key from the terminal: a cancel key (Esc or Ctrl+C) or a plain character.
type Key struct {
	Cancel bool
	// Esc marks the cancel key that is Esc: inside a question (an edit, the abort confirmation) Esc
	// steps back out of the question, while Ctrl+C still cancels the session.
	Esc bool
	Ch  byte
}

// SplitKeys turns one read from a terminal in raw mode into keys; fast typing can put several in
// one read. Esc alone and Ctrl+C cancel. An Alt combination or an arrow key also starts with Esc
// but has more bytes right after it, so it is skipped whole and does not cancel; neither does a
// lone "c".
func SplitKeys(b []byte) []Key {
	var keys []Key
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == 0x03:
			keys = append(keys, Key{Cancel: true})
		case c == 0x1b && i == len(b)-1:
			keys = append(keys, Key{Cancel: true, Esc: true})
		case c == 0x1b && b[i+1] == '[':
			// A control sequence: ESC [ parameters, then one final byte in 0x40..0x7e.
			for i += 2; i < len(b) && (b[i] < 0x40 || b[i] > 0x7e); i++ {
			}
		case c == 0x1b:
			i++ // Alt+key
		default:
			keys = append(keys, Key{Ch: c})
		}
	}
	return keys
}

// bytes is the key as the terminal sends it.
func (k Key) bytes() []byte {
	switch {
	case k.Esc:
		return []byte{0x1b}
	case k.Cancel:
		return []byte{0x03}
	}
	return []byte{k.Ch}
}
