package cli

import "testing"

func TestClassifyKeys(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want keyKind
	}{
		{"Esc alone", []byte{0x1b}, keyCancel},
		{"Ctrl+C", []byte{0x03}, keyCancel},
		{"a lone c", []byte("c"), keyOther},
		{"capital C", []byte("C"), keyOther},
		{"Alt+c", []byte{0x1b, 'c'}, keyOther},
		{"Alt+x", []byte{0x1b, 'x'}, keyOther},
		{"arrow up", []byte{0x1b, '[', 'A'}, keyOther},
		{"Ctrl+D", []byte{0x04}, keyOther},
		{"Enter", []byte{'\r'}, keyOther},
		{"Esc then c typed fast", []byte{0x1b, 0x1b}, keyOther},
		{"nothing", nil, keyOther},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := classifyKeys(c.in); got != c.want {
				t.Fatalf("classifyKeys(%q) = %v, want %v", c.in, got, c.want)
			}
		})
	}
}
