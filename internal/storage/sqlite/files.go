package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/junction-router/junction/internal/storage"
)

// tmpPrefix names upload files not yet complete; Open removes them.
const tmpPrefix = ".upload-"

// CreateFile implements storage.Files.
func (s *Store) CreateFile(ctx context.Context, nf storage.NewFile, r io.Reader, limit int64) (storage.File, error) {
	if err := s.check(ctx); err != nil {
		return storage.File{}, err
	}
	f, err := storage.NewFileRow(nf)
	if err != nil {
		return storage.File{}, err
	}
	tmp, err := os.CreateTemp(s.files, tmpPrefix+"*")
	if err != nil {
		return storage.File{}, fmt.Errorf("sqlite: create an upload file: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	src := storage.ContextReader(ctx, r)
	if limit > 0 {
		src = io.LimitReader(src, limit+1)
	}
	n, err := io.Copy(io.MultiWriter(tmp, h), src)
	if err != nil {
		return storage.File{}, fmt.Errorf("sqlite: read the upload: %w", err)
	}
	if limit > 0 && n > limit {
		return storage.File{}, fmt.Errorf("%w: the file is larger than %d bytes", storage.ErrTooLarge, limit)
	}
	if err := tmp.Sync(); err != nil {
		return storage.File{}, fmt.Errorf("sqlite: sync the upload: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return storage.File{}, fmt.Errorf("sqlite: close the upload: %w", err)
	}
	// Created once its bytes are on disk.
	f.Bytes, f.SHA256, f.CreatedAt = n, hex.EncodeToString(h.Sum(nil)), now()
	final := filepath.Join(s.files, f.ID)
	if err := os.Rename(tmp.Name(), final); err != nil {
		return storage.File{}, fmt.Errorf("sqlite: place the upload: %w", err)
	}
	keep = true
	if err := syncDir(s.files); err != nil {
		os.Remove(final)
		return storage.File{}, err
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO files (id, filename, purpose, bytes, sha256, media_type, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			f.ID, f.Filename, f.Purpose, f.Bytes, f.SHA256, f.MediaType, f.CreatedAt.UnixNano())
		return err
	}, nil)
	if err != nil {
		os.Remove(final)
		return storage.File{}, fmt.Errorf("sqlite: record the file: %w", err)
	}
	return f, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sqlite: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sqlite: sync %s: %w", dir, err)
	}
	return nil
}

// OpenFile implements storage.Files.
func (s *Store) OpenFile(ctx context.Context, id string) (io.ReadCloser, storage.File, error) {
	f, err := s.GetFile(ctx, id)
	if err != nil {
		return nil, f, err
	}
	rc, err := os.Open(filepath.Join(s.files, f.ID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, f, fmt.Errorf("file %q: its bytes are gone: %w", id, storage.ErrNotFound)
	}
	if err != nil {
		return nil, f, fmt.Errorf("sqlite: open file: %w", err)
	}
	return rc, f, nil
}

// DeleteFile implements storage.Files.
func (s *Store) DeleteFile(ctx context.Context, id string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		return storage.DeleteFileRows(ctx, tx, "sqlite", id)
	}, func() { s.index.RemoveFileEverywhere(id) })
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(s.files, id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		// The row is gone; the bytes are an orphan Open removes.
		s.log.Warn("sqlite: could not remove a deleted file's bytes; the next start removes them", "file_id", id, "error", err)
	}
	return nil
}

// removeOrphans removes upload leftovers and bytes without a row.
func (s *Store) removeOrphans(ctx context.Context) error {
	entries, err := os.ReadDir(s.files)
	if err != nil {
		return fmt.Errorf("sqlite: read %s: %w", s.files, err)
	}
	for _, e := range entries {
		name := e.Name()
		orphan := strings.HasPrefix(name, tmpPrefix)
		if !orphan {
			var one int
			err := s.r.QueryRowContext(ctx, `SELECT 1 FROM files WHERE id = ?`, name).Scan(&one)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				orphan = true
			case err != nil:
				return fmt.Errorf("sqlite: check %s: %w", name, err)
			}
		}
		if orphan {
			if err := os.RemoveAll(filepath.Join(s.files, name)); err != nil {
				return fmt.Errorf("sqlite: remove the orphan %s: %w", name, err)
			}
			s.log.Info("sqlite: removed an orphan upload", "name", name)
		}
	}
	return nil
}
