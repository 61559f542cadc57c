package tui

import (
	"reflect"
	"testing"
)

func TestSplitKeys(t *testing.T) {
	cancel := Key{Cancel: true}
	esc := Key{Cancel: true, Esc: true}
	ch := func(c byte) Key { return Key{Ch: c} }
	cases := []struct {
		name string
		in   []byte
		want []Key
	}{
		{"Esc alone", []byte{0x1b}, []Key{esc}},
		{"Ctrl+C", []byte{0x03}, []Key{cancel}},
		{"a lone c", []byte("c"), []Key{ch('c')}},
		{"capital C", []byte("C"), []Key{ch('C')}},
		{"Alt+c", []byte{0x1b, 'c'}, nil},
		{"Alt+x then y", []byte{0x1b, 'x', 'y'}, []Key{ch('y')}},
		{"arrow up", []byte{0x1b, '[', 'A'}, nil},
		{"F5", []byte{0x1b, '[', '1', '5', '~'}, nil},
		{"Ctrl+D", []byte{0x04}, []Key{ch(0x04)}},
		{"typed fast: c, Alt+c, y", []byte{'c', 0x1b, 'c', 'y'}, []Key{ch('c'), ch('y')}},
		{"y then Esc", []byte{'y', 0x1b}, []Key{ch('y'), esc}},
		{"nothing", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := SplitKeys(c.in); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("SplitKeys(%q) = %v, want %v", c.in, got, c.want)
			}
		})
	}
}
