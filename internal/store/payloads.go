package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	commonpb "go.temporal.io/api/common/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// PayloadThreshold is the payload size above which a payload is kept in the store and only a
// claim goes into Temporal's history: no payload over 128 KiB reaches history, well under the
// 256 KiB at which the server starts warning.
const PayloadThreshold = 128 << 10

// Blobs keeps opaque bytes by content address.
type Blobs interface {
	PutBlob(ctx context.Context, id string, data []byte) error
	GetBlob(ctx context.Context, id string) ([]byte, error)
}

// ExternalStorage configures the SDK to keep large payloads (a long model reply, a big file the
// model writes) in blobs instead of in history. Every client that reads those payloads (workers,
// starters) must be configured with the same blobs.
func ExternalStorage(b Blobs) converter.ExternalStorage {
	return converter.ExternalStorage{Drivers: []converter.StorageDriver{payloadDriver{b}}, PayloadSizeThreshold: PayloadThreshold}
}

// payloadDriver is the SDK storage driver over Blobs.
type payloadDriver struct{ blobs Blobs }

func (payloadDriver) Name() string { return "keel-store" }
func (payloadDriver) Type() string { return "keel-store" }

func (d payloadDriver) Store(ctx converter.StorageDriverStoreContext, payloads []*commonpb.Payload) ([]converter.StorageDriverClaim, error) {
	claims := make([]converter.StorageDriverClaim, len(payloads))
	for i, p := range payloads {
		data, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encoding a large payload: %w", err)
		}
		sum := sha256.Sum256(data)
		id := hex.EncodeToString(sum[:])
		if err := d.blobs.PutBlob(ctx.Context, id, data); err != nil {
			return nil, fmt.Errorf("storing a large payload: %w", err)
		}
		claims[i] = converter.StorageDriverClaim{ClaimData: map[string]string{"id": id}}
	}
	return claims, nil
}

func (d payloadDriver) Retrieve(ctx converter.StorageDriverRetrieveContext, claims []converter.StorageDriverClaim) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(claims))
	for i, c := range claims {
		data, err := d.blobs.GetBlob(ctx.Context, c.ClaimData["id"])
		if err != nil {
			return nil, fmt.Errorf("fetching a large payload: %w", err)
		}
		var p commonpb.Payload
		if err := proto.Unmarshal(data, &p); err != nil {
			return nil, fmt.Errorf("decoding a large payload: %w", err)
		}
		out[i] = &p
	}
	return out, nil
}

// PutBlob implements Blobs.
func (s *FileStore) PutBlob(_ context.Context, id string, data []byte) error {
	p := filepath.Join(s.dir, "blobs", id)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// GetBlob implements Blobs.
func (s *FileStore) GetBlob(_ context.Context, id string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "blobs", filepath.Base(id)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %s: %w", id, ErrNotFound)
	}
	return b, err
}

// PutBlob implements Blobs.
func (s *PostgresStore) PutBlob(ctx context.Context, id string, data []byte) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO keel_blobs (id, data) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`, id, data)
	return err
}

// GetBlob implements Blobs.
func (s *PostgresStore) GetBlob(ctx context.Context, id string) ([]byte, error) {
	var b []byte
	if err := s.pool.QueryRow(ctx, `SELECT data FROM keel_blobs WHERE id = $1`, id).Scan(&b); err != nil {
		return nil, fmt.Errorf("blob %s: %w", id, err)
	}
	return b, nil
}

// storageReferenceType is the message type of the claim the SDK puts into history for a payload
// it kept in a driver's storage.
const storageReferenceType = "temporal.api.sdk.v1.ExternalStorageReference"

// Resolver returns a function that turns a claim found in a history read raw (a watcher's
// events.Follow reads histories without the SDK's data path) into the payload kept in b, and
// returns any other payload as it is.
func Resolver(b Blobs) func(ctx context.Context, p *commonpb.Payload) (*commonpb.Payload, error) {
	return func(ctx context.Context, p *commonpb.Payload) (*commonpb.Payload, error) {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != converter.MetadataEncodingProtoJSON ||
			string(p.GetMetadata()["messageType"]) != storageReferenceType {
			return p, nil
		}
		var ref sdkpb.ExternalStorageReference
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(p.GetData(), &ref); err != nil {
			return nil, fmt.Errorf("reading a large payload's claim: %w", err)
		}
		if ref.GetDriverName() != (payloadDriver{}).Name() {
			return nil, fmt.Errorf("a large payload kept by %q, not by Keel's store", ref.GetDriverName())
		}
		got, err := payloadDriver{b}.Retrieve(converter.StorageDriverRetrieveContext{Context: ctx},
			[]converter.StorageDriverClaim{{ClaimData: ref.GetClaimData()}})
		if err != nil {
			return nil, err
		}
		return got[0], nil
	}
}
