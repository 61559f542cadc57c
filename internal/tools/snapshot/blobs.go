package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ReadBlob returns a content the store keeps, by hash: what a recorded workspace uploads to
// Keel's store.
func (s *Store) ReadBlob(hash string) ([]byte, error) {
	if !hashPattern.MatchString(hash) {
		return nil, fmt.Errorf("%q is not a content hash", hash)
	}
	f, err := os.OpenFile(s.blobPath(hash), readFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}

// HasBlob says whether the store keeps a content.
func (s *Store) HasBlob(hash string) bool {
	if !hashPattern.MatchString(hash) {
		return false
	}
	_, err := os.Stat(s.blobPath(hash))
	return err == nil
}

// PutBlob keeps a content that came from elsewhere (a workspace recorded by another worker) under
// its hash, so Restore can write it. Content whose hash is not the one given is refused.
func (s *Store) PutBlob(hash string, data []byte) error {
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != hash {
		return errors.New("the content does not match its hash")
	}
	if int64(len(data)) > MaxFileSize {
		return errors.New("the content is larger than a snapshot keeps")
	}
	dst := s.blobPath(hash)
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.Root, "blob-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return err
	}
	s.grow(diskSize(int64(len(data))))
	return nil
}
