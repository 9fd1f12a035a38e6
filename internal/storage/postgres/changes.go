package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/vecindex"
)

// Cross-replica visibility. Every write that changes what a search sees
// (a store created or deleted, a file completed, failed, detached or
// deleted) inserts a row into changes and NOTIFYs, in its transaction. Each
// Store follows the log: it LISTENs on its own connection and, on a
// notification or every PollInterval when none comes (a lost connection, a
// missed notification), reads the rows after the last it applied and
// brings its vector index in step with the tables. A change committed on
// one replica is searchable on another within the notification's delay
// (milliseconds) and at most PollInterval (default 1 s) plus one read.

// The change kinds are storage's (storage.ChangeStoreCreated, ...): the
// shared SQL names them to driver.Changed.

type follower struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (f *follower) stop() {
	f.cancel()
	<-f.done
}

func startFollower(s *Store, dsn string, last int64, interval time.Duration) *follower {
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
		for ctx.Err() == nil {
			if conn == nil {
				conn = listen(ctx, dsn)
			}
			if conn != nil {
				wctx, wcancel := context.WithTimeout(ctx, interval)
				_, err := conn.WaitForNotification(wctx)
				wcancel()
				if err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
					conn.Close(context.Background())
					conn = nil // reconnect on the next round; poll meanwhile
				}
			} else {
				select {
				case <-ctx.Done():
				case <-time.After(interval):
				}
			}
			if ctx.Err() != nil {
				return
			}
			var err error
			if last, err = s.applyChanges(ctx, last); err != nil && ctx.Err() == nil {
				s.log.Warn("postgres: following the change log failed; retrying", "error", err)
			}
		}
	}()
	return f
}

// listen opens the connection that waits for notifications; nil when it
// cannot (the follower polls then).
func listen(ctx context.Context, dsn string) *pgx.Conn {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil
	}
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		conn.Close(context.Background())
		return nil
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{schema + "_junction_changes"}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil
	}
	return conn
}

// applyChanges applies the log's rows after last written by other
// replicas and returns the last seq applied.
func (s *Store) applyChanges(ctx context.Context, last int64) (int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT seq, origin, kind, store_id, file_id FROM changes WHERE seq > ? ORDER BY seq LIMIT 1000`, last)
	if err != nil {
		return last, fmt.Errorf("postgres: read the change log: %w", err)
	}
	type change struct {
		seq                         int64
		origin, kind, store, fileID string
	}
	var batch []change
	for rows.Next() {
		var c change
		if err := rows.Scan(&c.seq, &c.origin, &c.kind, &c.store, &c.fileID); err != nil {
			rows.Close()
			return last, fmt.Errorf("postgres: read the change log: %w", err)
		}
		batch = append(batch, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return last, fmt.Errorf("postgres: read the change log: %w", err)
	}
	for _, c := range batch {
		if c.origin != s.replica {
			var err error
			switch c.kind {
			case storage.ChangeStoreCreated, storage.ChangeStoreDeleted:
				err = s.applyStore(ctx, c.store)
			case storage.ChangeFileCompleted, storage.ChangeFileRemoved:
				err = s.applyFile(ctx, c.store, c.fileID)
			case storage.ChangeFileDeleted:
				s.wmu.Lock()
				s.index.RemoveFileEverywhere(c.fileID)
				s.wmu.Unlock()
			}
			if err != nil {
				return last, err
			}
			if c.store != "" && s.onChange != nil {
				s.onChange(c.store)
			}
		}
		last = c.seq
	}
	return last, nil
}

// applyStore brings one store in the index in step with the tables: added
// with its completed files when it exists, dropped when it does not.
func (s *Store) applyStore(ctx context.Context, storeID string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var dim int
	err := s.r.QueryRowContext(ctx, `SELECT dimensions FROM vector_stores WHERE id = ?`, storeID).Scan(&dim)
	if errors.Is(err, sql.ErrNoRows) {
		s.index.DropStore(storeID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("postgres: follow vector store %s: %w", storeID, err)
	}
	if _, ok := s.index.Dimension(storeID); ok {
		return nil
	}
	s.index.AddStore(storeID, dim)
	rows, err := s.r.QueryContext(ctx, `SELECT file_id FROM vector_store_files WHERE store_id = ? AND status = ?`, storeID, storage.StatusCompleted)
	if err != nil {
		return fmt.Errorf("postgres: follow vector store %s: %w", storeID, err)
	}
	var files []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("postgres: follow vector store %s: %w", storeID, err)
		}
		files = append(files, id)
	}
	rows.Close()
	for _, id := range files {
		if err := s.loadFile(ctx, storeID, id); err != nil {
			return err
		}
	}
	return rows.Err()
}

// applyFile brings one file of a store in the index in step with the
// tables.
func (s *Store) applyFile(ctx context.Context, storeID, fileID string) error {
	if _, ok := s.index.Dimension(storeID); !ok {
		return s.applyStore(ctx, storeID)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.loadFile(ctx, storeID, fileID)
}

// loadFile (under wmu) puts a completed file's vectors in the index, or
// takes a file that is not completed out of it.
func (s *Store) loadFile(ctx context.Context, storeID, fileID string) error {
	var status, raw string
	err := s.r.QueryRowContext(ctx, `SELECT status, attributes FROM vector_store_files WHERE store_id = ? AND file_id = ?`, storeID, fileID).Scan(&status, &raw)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && status != storage.StatusCompleted) {
		s.index.RemoveFile(storeID, fileID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("postgres: follow file %s: %w", fileID, err)
	}
	attrs, err := storage.DecodeAttributes(raw)
	if err != nil {
		return fmt.Errorf("postgres: follow file %s: %w", fileID, err)
	}
	if err := s.reloadFile(ctx, storeID, fileID, attrs); err != nil && !errors.Is(err, vecindex.ErrNoStore) {
		return err
	}
	return nil
}
