package postgres

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/junction-router/junction/internal/storage"
)

// CreateFile implements storage.Files.
func (s *Store) CreateFile(ctx context.Context, nf storage.NewFile, r io.Reader, limit int64) (storage.File, error) {
	if err := s.check(ctx); err != nil {
		return storage.File{}, err
	}
	f, err := storage.NewFileRow(nf)
	if err != nil {
		return storage.File{}, err
	}
	h := sha256.New()
	src := storage.ContextReader(ctx, r)
	if limit > 0 {
		src = io.LimitReader(src, limit+1)
	}
	// One transaction holds the row and every part: a reader never sees a
	// file without all its bytes, and a failed upload leaves nothing.
	err = s.tx(ctx, func(tx *pgTx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO files (id, filename, purpose, bytes, sha256, media_type, created_at) VALUES (?, ?, ?, 0, '', ?, ?)`,
			f.ID, f.Filename, f.Purpose, f.MediaType, f.CreatedAt.UnixNano()); err != nil {
			return fmt.Errorf("postgres: record the file: %w", err)
		}
		buf := make([]byte, partSize)
		for part := 0; ; part++ {
			n, err := io.ReadFull(src, buf)
			if n > 0 {
				f.Bytes += int64(n)
				if limit > 0 && f.Bytes > limit {
					return fmt.Errorf("%w: the file is larger than %d bytes", storage.ErrTooLarge, limit)
				}
				h.Write(buf[:n])
				if _, err := tx.ExecContext(ctx, `INSERT INTO file_parts (file_id, part, data) VALUES (?, ?, ?)`, f.ID, part, buf[:n]); err != nil {
					return fmt.Errorf("postgres: store the upload: %w", err)
				}
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				return fmt.Errorf("postgres: read the upload: %w", err)
			}
		}
		f.SHA256 = hex.EncodeToString(h.Sum(nil))
		if _, err := tx.ExecContext(ctx, `UPDATE files SET bytes = ?, sha256 = ? WHERE id = ?`, f.Bytes, f.SHA256, f.ID); err != nil {
			return fmt.Errorf("postgres: record the file: %w", err)
		}
		return nil
	}, nil)
	if err != nil {
		return storage.File{}, err
	}
	return f, nil
}

// partSize is the size of the bytea parts a file's bytes are kept in: an
// upload or a download holds one part in memory, not the file.
const partSize = 1 << 20

// OpenFile implements storage.Files.
func (s *Store) OpenFile(ctx context.Context, id string) (io.ReadCloser, storage.File, error) {
	f, err := s.GetFile(ctx, id)
	if err != nil {
		return nil, f, err
	}
	return &partReader{ctx: ctx, s: s, id: f.ID}, f, nil
}

// partReader streams a file's parts, one query per part.
type partReader struct {
	ctx  context.Context
	s    *Store
	id   string
	part int
	buf  []byte
	done bool
}

func (p *partReader) Read(b []byte) (int, error) {
	for len(p.buf) == 0 {
		if p.done {
			return 0, io.EOF
		}
		err := p.s.r.QueryRowContext(p.ctx, `SELECT data FROM file_parts WHERE file_id = ? AND part = ?`, p.id, p.part).Scan(&p.buf)
		if errors.Is(err, sql.ErrNoRows) {
			p.done = true
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("postgres: read file %s: %w", p.id, err)
		}
		p.part++
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	return n, nil
}

func (p *partReader) Close() error { p.done, p.buf = true, nil; return nil }

// DeleteFile implements storage.Files.
func (s *Store) DeleteFile(ctx context.Context, id string) error {
	err := s.tx(ctx, func(tx *pgTx) error {
		// Each store it leaves is a change other replicas follow (their
		// caches of that store's results go too).
		if _, err := tx.ExecContext(ctx, `INSERT INTO changes (origin, kind, store_id, file_id, at) SELECT ?, ?, store_id, file_id, ? FROM vector_store_files WHERE file_id = ?`,
			s.replica, storage.ChangeFileRemoved, now().UnixNano(), id); err != nil {
			return fmt.Errorf("postgres: delete file: %w", err)
		}
		if err := storage.DeleteFileRows(ctx, tx, "postgres", id); err != nil {
			return err
		}
		return logChange(ctx, tx, s.replica, storage.ChangeFileDeleted, "", id)
	}, func() { s.index.RemoveFileEverywhere(id) })
	if err != nil {
		return err
	}
	return nil
}
