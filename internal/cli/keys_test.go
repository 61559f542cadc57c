package cli

import (
	"reflect"
	"testing"
)

func TestSplitKeys(t *testing.T) {
	cancel := keypress{cancel: true}
	esc := keypress{cancel: true, esc: true}
	ch := func(c byte) keypress { return keypress{ch: c} }
	cases := []struct {
		name string
		in   []byte
		want []keypress
	}{
		{"Esc alone", []byte{0x1b}, []keypress{esc}},
		{"Ctrl+C", []byte{0x03}, []keypress{cancel}},
		{"a lone c", []byte("c"), []keypress{ch('c')}},
		{"capital C", []byte("C"), []keypress{ch('C')}},
		{"Alt+c", []byte{0x1b, 'c'}, nil},
		{"Alt+x then y", []byte{0x1b, 'x', 'y'}, []keypress{ch('y')}},
		{"arrow up", []byte{0x1b, '[', 'A'}, nil},
		{"F5", []byte{0x1b, '[', '1', '5', '~'}, nil},
		{"Ctrl+D", []byte{0x04}, []keypress{ch(0x04)}},
		{"typed fast: c, Alt+c, y", []byte{'c', 0x1b, 'c', 'y'}, []keypress{ch('c'), ch('y')}},
		{"y then Esc", []byte{'y', 0x1b}, []keypress{ch('y'), esc}},
		{"nothing", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := splitKeys(c.in); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("splitKeys(%q) = %v, want %v", c.in, got, c.want)
			}
		})
	}
}
