// Package codec encrypts what Keel writes outside its own processes: every Temporal payload (a
// converter.PayloadCodec under the data converter) and the transcripts and large payloads in the
// store. It uses AES-256-GCM from the standard library. Keys have IDs: the first key of a Keyring
// encrypts and its ID goes into the payload's metadata, and every key of the ring decrypts, so a
// key rotates by putting the new one first and keeping the old one behind it.
package codec

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// Metadata of an encrypted payload: the encoding names the codec (the Web UI and the CLI show it
// to those without the codec server), the key ID says which key decrypts.
const (
	Encoding    = "binary/encrypted"
	MetadataKey = "encryption-key-id"
)

// KeySize is the length of an AES-256 key in bytes.
const KeySize = 32

// sealedPrefix marks bytes Seal wrote, so Open can tell them from plain bytes written before a
// key was configured.
var sealedPrefix = []byte("keel-sealed:v1:")

// Key is one AES-256 key and the ID payloads name it by.
type Key struct {
	ID     string
	Secret []byte
	aead   cipher.AEAD
}

// Keyring holds the configured keys; the first encrypts, all decrypt.
type Keyring struct {
	keys []Key
}

// NewKeyring builds a ring from keys, the encrypting key first.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("no encryption key given")
	}
	seen := map[string]bool{}
	r := &Keyring{}
	for _, k := range keys {
		if k.ID == "" || strings.ContainsAny(k.ID, ":=, ") {
			return nil, fmt.Errorf("key ID %q must be non-empty, without spaces, commas, colons or equals signs", k.ID)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("key ID %q is given twice", k.ID)
		}
		seen[k.ID] = true
		if len(k.Secret) != KeySize {
			return nil, fmt.Errorf("key %s has %d bytes; AES-256 needs %d (make one with: head -c 32 /dev/urandom | base64)", k.ID, len(k.Secret), KeySize)
		}
		block, err := aes.NewCipher(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", k.ID, err)
		}
		if k.aead, err = cipher.NewGCM(block); err != nil {
			return nil, fmt.Errorf("key %s: %w", k.ID, err)
		}
		r.keys = append(r.keys, k)
	}
	return r, nil
}

// ParseKeys reads keys from specs of the form ID=env:VARIABLE or ID=file:PATH, the encrypting key
// first. A key is 32 bytes: as base64 or hex text, or (in a file) the raw bytes. lookup reads an
// environment variable (os.LookupEnv in programs).
func ParseKeys(specs []string, lookup func(string) (string, bool)) (*Keyring, error) {
	var keys []Key
	for _, spec := range specs {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		k, err := parseKey(spec, lookup)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return NewKeyring(keys...)
}

// parseKey reads one ID=env:NAME or ID=file:PATH spec.
func parseKey(spec string, lookup func(string) (string, bool)) (Key, error) {
	id, source, ok := strings.Cut(spec, "=")
	kind, ref, ok2 := strings.Cut(source, ":")
	if !ok || !ok2 || ref == "" {
		return Key{}, fmt.Errorf("key %q is not ID=env:VARIABLE or ID=file:PATH", spec)
	}
	var raw []byte
	switch kind {
	case "env":
		v, found := lookup(ref)
		if !found || v == "" {
			return Key{}, fmt.Errorf("key %s: the environment variable %s is not set", id, ref)
		}
		raw = []byte(v)
	case "file":
		b, err := os.ReadFile(ref)
		if err != nil {
			return Key{}, fmt.Errorf("key %s: reading its file: %w", id, err)
		}
		raw = b
	default:
		return Key{}, fmt.Errorf("key %q: the source must be env or file, not %s", spec, kind)
	}
	return Key{ID: id, Secret: decodeSecret(raw)}, nil
}

// decodeSecret accepts a key as raw bytes, base64 or hex text (surrounding space ignored).
func decodeSecret(raw []byte) []byte {
	if len(raw) == KeySize {
		return raw
	}
	text := strings.TrimSpace(string(raw))
	if b, err := base64.StdEncoding.DecodeString(text); err == nil && len(b) == KeySize {
		return b
	}
	if b, err := base64.RawURLEncoding.DecodeString(text); err == nil && len(b) == KeySize {
		return b
	}
	if b, err := hex.DecodeString(text); err == nil && len(b) == KeySize {
		return b
	}
	return []byte(text)
}

// EncryptingKeyID is the ID of the key new data is encrypted with.
func (r *Keyring) EncryptingKeyID() string { return r.keys[0].ID }

// key finds a key by ID.
func (r *Keyring) key(id string) (Key, bool) {
	for _, k := range r.keys {
		if k.ID == id {
			return k, true
		}
	}
	return Key{}, false
}

// seal encrypts plain with the encrypting key, binding the key ID as additional data: nonce
// followed by the ciphertext and tag.
func (r *Keyring) seal(plain []byte) (id string, out []byte, err error) {
	k := r.keys[0]
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, fmt.Errorf("drawing a nonce: %w", err)
	}
	return k.ID, k.aead.Seal(nonce, nonce, plain, []byte(k.ID)), nil
}

// open decrypts what seal wrote with the key named id.
func (r *Keyring) open(id string, data []byte) ([]byte, error) {
	k, ok := r.key(id)
	if !ok {
		return nil, fmt.Errorf("the data is encrypted with key %q, which is not among the configured keys (codec.keys): add it behind the current key", id)
	}
	n := k.aead.NonceSize()
	if len(data) < n {
		return nil, fmt.Errorf("encrypted data under key %s is too short", id)
	}
	plain, err := k.aead.Open(nil, data[:n], data[n:], []byte(id))
	if err != nil {
		return nil, fmt.Errorf("decrypting with key %s: the data was altered or the key with that ID is not the one that encrypted it", id)
	}
	return plain, nil
}

// Seal encrypts bytes kept at rest (store files and rows): a prefix, the key ID, a colon, then
// nonce, ciphertext and tag.
func (r *Keyring) Seal(plain []byte) ([]byte, error) {
	id, ct, err := r.seal(plain)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(sealedPrefix)+len(id)+1+len(ct))
	out = append(append(append(append(out, sealedPrefix...), id...), ':'), ct...)
	return out, nil
}

// Open decrypts what Seal wrote; bytes without Seal's prefix (written before a key was
// configured) come back as they are.
func (r *Keyring) Open(data []byte) ([]byte, error) {
	if !IsSealed(data) {
		return data, nil
	}
	rest := data[len(sealedPrefix):]
	i := bytes.IndexByte(rest, ':')
	if i < 0 {
		return nil, errors.New("sealed data has no key ID")
	}
	return r.open(string(rest[:i]), rest[i+1:])
}

// IsSealed says whether data was written by Seal.
func IsSealed(data []byte) bool { return bytes.HasPrefix(data, sealedPrefix) }

// Encode implements converter.PayloadCodec: each payload, metadata and all, becomes the data of
// an encrypted payload whose metadata holds only the encoding and the key ID.
func (r *Keyring) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encoding a payload for encryption: %w", err)
		}
		id, ct, err := r.seal(plain)
		if err != nil {
			return nil, err
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{converter.MetadataEncoding: []byte(Encoding), MetadataKey: []byte(id)},
			Data:     ct,
		}
	}
	return out, nil
}

// Decode implements converter.PayloadCodec; payloads that are not encrypted (written without a
// key) pass unchanged.
func (r *Keyring) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		plain, err := r.open(string(p.GetMetadata()[MetadataKey]), p.GetData())
		if err != nil {
			return nil, err
		}
		var dec commonpb.Payload
		if err := proto.Unmarshal(plain, &dec); err != nil {
			return nil, fmt.Errorf("decoding a decrypted payload: %w", err)
		}
		out[i] = &dec
	}
	return out, nil
}

// DataConverter is the SDK's default converter with this ring's encryption under it.
func (r *Keyring) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), r)
}

// FailureConverter encrypts failures too: with EncodeCommonAttributes the message and stack trace
// move into an encoded payload, so an error quoting the task or a file is not left in plain text.
func (r *Keyring) FailureConverter() converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter: r.DataConverter(), EncodeCommonAttributes: true,
	})
}
