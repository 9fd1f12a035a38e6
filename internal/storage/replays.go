package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ---- Replays: router_replay's decision records and their outcomes

// Replay is one routed request's decision record, as router_replay kept it
// (internal/replay builds Record; the store keeps it as it is and indexes
// the fields a list filters on).
type Replay struct {
	ID        string // "rpl_" + random (NewReplayID)
	RequestID string
	CreatedAt time.Time
	Recipe    string
	Decision  string // "" when no decision matched
	Model     string
	Status    int
	// Record is the JSON decision record.
	Record []byte
}

// ReplayBounds bound the records of one (recipe, decision): the newest
// MaxRecords, at most MaxBytes of Record, none older than MaxAge. A zero
// field does not bound.
type ReplayBounds struct {
	MaxRecords int
	MaxBytes   int64
	MaxAge     time.Duration
}

// ReplayQuery narrows a list of replays: each non-empty field must match
// (Decision "-" matches records without a decision), Since and Until bound
// the creation time (inclusive, exclusive).
type ReplayQuery struct {
	Recipe, Decision, Model, RequestID string
	Since, Until                       time.Time
}

// Outcome is a verdict on a replayed request, from a user or a judge.
type Outcome struct {
	ID       string // "out_" + random
	ReplayID string
	Target   string
	Verdict  string
	Score    *float64
	Source   string
	// Principal is who submitted it (provenance: the authenticated
	// principal, never the body's source).
	Principal string
	// IdempotencyKey makes a retried submission of the same principal
	// one outcome.
	IdempotencyKey string
	// Category is the replay's decision when the outcome was kept (the
	// replay itself may be pruned later).
	Category  string
	CreatedAt time.Time
}

// OutcomeTally counts one category's verdicts on a target.
type OutcomeTally struct {
	Category string
	Correct  int
	Total    int
}

// Replays keeps decision records and outcomes.
type Replays interface {
	// PutReplays keeps records (IDs assigned when empty) in one
	// transaction, then prunes each (recipe, decision) they belong to
	// to bounds[recipe+"\x00"+decision] when present.
	PutReplays(ctx context.Context, rs []Replay, bounds map[string]ReplayBounds) error
	GetReplay(ctx context.Context, id string) (Replay, error)
	// ListReplays pages through the records q selects.
	ListReplays(ctx context.Context, q ReplayQuery, o ListOptions) (Page[Replay], error)
	// ScanReplays calls fn for the newest max records q selects, newest
	// first; fn's error stops the scan and is returned.
	ScanReplays(ctx context.Context, q ReplayQuery, max int, fn func(Replay) error) error
	// UpdateReplay replaces a record's JSON (a shadow's outcome added).
	UpdateReplay(ctx context.Context, id string, record []byte) error
	// AddOutcome keeps an outcome of an existing replay (ErrNotFound
	// otherwise). A second submission with the same principal and
	// idempotency key returns the first (created false) when it says the
	// same, ErrConflict when it does not.
	AddOutcome(ctx context.Context, o Outcome) (kept Outcome, created bool, err error)
	// TallyOutcomes counts, per category, the outcomes on target and those
	// among them whose verdict is one of correct.
	TallyOutcomes(ctx context.Context, target string, correct []string) ([]OutcomeTally, error)
}

// BoundsKey is the key of a (recipe, decision) in PutReplays' bounds.
func BoundsKey(recipe, decision string) string { return recipe + "\x00" + decision }

var replayIDs = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewReplayID returns a fresh replay id.
func NewReplayID() string { return newRandomID("rpl_") }

func newRandomID(prefix string) string {
	var b [15]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("storage: crypto/rand failed: " + err.Error())
	}
	return prefix + replayIDs.EncodeToString(b[:])
}

// Execer is what the replay writes run in: a backend's transaction (a
// *sql.Tx, or one that rewrites ? placeholders into its dialect).
type Execer interface {
	Querier
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Limits on what a replay and an outcome may hold.
const (
	MaxReplayRecord   = 4 << 20
	MaxOutcomeField   = 256
	MaxIdempotencyKey = 255
)

const replayCols = `seq, id, request_id, recipe, decision, model, status, created_at, record`

func scanReplay(row interface{ Scan(...any) error }) (Replay, error) {
	var r Replay
	var seq, created int64
	if err := row.Scan(&seq, &r.ID, &r.RequestID, &r.Recipe, &r.Decision, &r.Model, &r.Status, &created, &r.Record); err != nil {
		return r, err
	}
	r.CreatedAt = time.Unix(0, created).UTC()
	return r, nil
}

// InsertReplays is PutReplays' write, shared by the SQL backends (tx is
// the write's transaction); backend names it in errors.
func InsertReplays(ctx context.Context, tx Execer, backend string, rs []Replay, bounds map[string]ReplayBounds, now time.Time) error {
	scopes := map[string][2]string{}
	for i := range rs {
		r := &rs[i]
		if len(r.Record) == 0 || len(r.Record) > MaxReplayRecord {
			return fmt.Errorf("%w: a replay record must hold 1 to %d bytes (got %d)", ErrInvalid, MaxReplayRecord, len(r.Record))
		}
		if r.ID == "" {
			r.ID = NewReplayID()
		}
		if r.CreatedAt.IsZero() {
			r.CreatedAt = now
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO replays (id, request_id, recipe, decision, model, status, created_at, size, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.RequestID, r.Recipe, r.Decision, r.Model, r.Status, r.CreatedAt.UnixNano(), len(r.Record), r.Record); err != nil {
			return fmt.Errorf("%s: keep a replay: %w", backend, err)
		}
		scopes[BoundsKey(r.Recipe, r.Decision)] = [2]string{r.Recipe, r.Decision}
	}
	for key, sc := range scopes {
		b, ok := bounds[key]
		if !ok {
			continue
		}
		if err := pruneReplays(ctx, tx, sc[0], sc[1], b, now); err != nil {
			return fmt.Errorf("%s: prune replays: %w", backend, err)
		}
	}
	return nil
}

// pruneReplays holds one (recipe, decision) to b: too old first, then the
// oldest past the count, then the oldest past the bytes.
func pruneReplays(ctx context.Context, tx Execer, recipe, decision string, b ReplayBounds, now time.Time) error {
	const scope = `recipe = ? AND decision = ?`
	if b.MaxAge > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM replays WHERE `+scope+` AND created_at < ?`, recipe, decision, now.Add(-b.MaxAge).UnixNano()); err != nil {
			return err
		}
	}
	var n, bytes int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*), CAST(coalesce(sum(size), 0) AS BIGINT) FROM replays WHERE `+scope, recipe, decision).Scan(&n, &bytes); err != nil {
		return err
	}
	if b.MaxRecords > 0 && n > int64(b.MaxRecords) {
		var cut int64
		if err := tx.QueryRowContext(ctx, `SELECT seq FROM replays WHERE `+scope+` ORDER BY seq DESC LIMIT 1 OFFSET ?`, recipe, decision, b.MaxRecords).Scan(&cut); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM replays WHERE `+scope+` AND seq <= ?`, recipe, decision, cut); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT CAST(coalesce(sum(size), 0) AS BIGINT) FROM replays WHERE `+scope, recipe, decision).Scan(&bytes); err != nil {
			return err
		}
	}
	if b.MaxBytes <= 0 || bytes <= b.MaxBytes {
		return nil
	}
	// Walk from the oldest until what is left fits.
	rows, err := tx.QueryContext(ctx, `SELECT seq, size FROM replays WHERE `+scope+` ORDER BY seq ASC`, recipe, decision)
	if err != nil {
		return err
	}
	var cut int64 = -1
	for rows.Next() && bytes > b.MaxBytes {
		var seq, size int64
		if err := rows.Scan(&seq, &size); err != nil {
			rows.Close()
			return err
		}
		bytes -= size
		cut = seq
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	rows.Close()
	if cut < 0 {
		return nil
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM replays WHERE `+scope+` AND seq <= ?`, recipe, decision, cut)
	return err
}

// GetReplayFrom reads one replay (shared by the SQL backends).
func GetReplayFrom(ctx context.Context, db Querier, backend, id string) (Replay, error) {
	r, err := scanReplay(db.QueryRowContext(ctx, `SELECT `+replayCols+` FROM replays WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("replay %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("%s: get replay: %w", backend, err)
	}
	return r, nil
}

func replayWhere(q ReplayQuery) (string, []any) {
	var conds []string
	var args []any
	eq := func(col, v string) {
		if v != "" {
			conds, args = append(conds, col+" = ?"), append(args, v)
		}
	}
	eq("recipe", q.Recipe)
	if q.Decision == "-" {
		conds = append(conds, "decision = ''")
	} else {
		eq("decision", q.Decision)
	}
	eq("model", q.Model)
	eq("request_id", q.RequestID)
	if !q.Since.IsZero() {
		conds, args = append(conds, "created_at >= ?"), append(args, q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		conds, args = append(conds, "created_at < ?"), append(args, q.Until.UnixNano())
	}
	return strings.Join(conds, " AND "), args
}

// ListReplaysFrom pages through replays (shared by the SQL backends).
func ListReplaysFrom(ctx context.Context, db Querier, backend string, q ReplayQuery, o ListOptions) (Page[Replay], error) {
	where, args := replayWhere(q)
	return List(ctx, db, backend, PageQuery[Replay]{
		Select: `SELECT ` + replayCols + ` FROM replays`, Where: where, Args: args,
		Cursor: `SELECT seq FROM replays WHERE id = ?`,
		Scan:   func(r *sql.Rows) (Replay, error) { return scanReplay(r) },
	}, o)
}

// ScanReplaysFrom is ScanReplays (shared by the SQL backends).
func ScanReplaysFrom(ctx context.Context, db Querier, backend string, q ReplayQuery, max int, fn func(Replay) error) error {
	if max < 1 {
		return fmt.Errorf("%w: a replay scan needs a positive maximum (got %d)", ErrInvalid, max)
	}
	where, args := replayWhere(q)
	sqlq := `SELECT ` + replayCols + ` FROM replays`
	if where != "" {
		sqlq += " WHERE " + where
	}
	sqlq += fmt.Sprintf(" ORDER BY seq DESC LIMIT %d", max)
	rows, err := db.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return fmt.Errorf("%s: scan replays: %w", backend, err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanReplay(rows)
		if err != nil {
			return fmt.Errorf("%s: scan replays: %w", backend, err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: scan replays: %w", backend, err)
	}
	return nil
}

// UpdateReplayIn is UpdateReplay's write (shared by the SQL backends).
func UpdateReplayIn(ctx context.Context, tx Execer, backend, id string, record []byte) error {
	if len(record) == 0 || len(record) > MaxReplayRecord {
		return fmt.Errorf("%w: a replay record must hold 1 to %d bytes (got %d)", ErrInvalid, MaxReplayRecord, len(record))
	}
	res, err := tx.ExecContext(ctx, `UPDATE replays SET record = ?, size = ? WHERE id = ?`, record, len(record), id)
	if err != nil {
		return fmt.Errorf("%s: update replay: %w", backend, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("replay %q: %w", id, ErrNotFound)
	}
	return nil
}

// CheckOutcome checks an outcome's fields before it is kept.
func CheckOutcome(o Outcome) error {
	for name, v := range map[string]string{"replay_id": o.ReplayID, "target": o.Target, "verdict": o.Verdict} {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("%w: %s is required", ErrInvalid, name)
		}
	}
	for name, v := range map[string]string{"replay_id": o.ReplayID, "target": o.Target, "verdict": o.Verdict, "source": o.Source, "principal": o.Principal} {
		if len(v) > MaxOutcomeField {
			return fmt.Errorf("%w: %s is longer than %d bytes", ErrInvalid, name, MaxOutcomeField)
		}
	}
	if len(o.IdempotencyKey) > MaxIdempotencyKey {
		return fmt.Errorf("%w: the idempotency key is longer than %d bytes", ErrInvalid, MaxIdempotencyKey)
	}
	return nil
}

const outcomeCols = `id, replay_id, target, verdict, score, source, principal, idempotency_key, category, created_at`

func scanOutcome(row interface{ Scan(...any) error }) (Outcome, error) {
	var o Outcome
	var score sql.NullFloat64
	var created int64
	if err := row.Scan(&o.ID, &o.ReplayID, &o.Target, &o.Verdict, &score, &o.Source, &o.Principal, &o.IdempotencyKey, &o.Category, &created); err != nil {
		return o, err
	}
	if score.Valid {
		o.Score = &score.Float64
	}
	o.CreatedAt = time.Unix(0, created).UTC()
	return o, nil
}

// AddOutcomeIn is AddOutcome's write (shared by the SQL backends).
func AddOutcomeIn(ctx context.Context, tx Execer, backend string, o Outcome, now time.Time) (Outcome, bool, error) {
	if err := CheckOutcome(o); err != nil {
		return Outcome{}, false, err
	}
	if o.IdempotencyKey != "" {
		prev, err := scanOutcome(tx.QueryRowContext(ctx, `SELECT `+outcomeCols+` FROM replay_outcomes WHERE principal = ? AND idempotency_key = ?`, o.Principal, o.IdempotencyKey))
		switch {
		case err == nil:
			if prev.ReplayID != o.ReplayID || prev.Target != o.Target || prev.Verdict != o.Verdict || prev.Source != o.Source || !sameScore(prev.Score, o.Score) {
				return Outcome{}, false, fmt.Errorf("%w: idempotency key %q was used for a different outcome (%s)", ErrConflict, o.IdempotencyKey, prev.ID)
			}
			return prev, false, nil
		case !errors.Is(err, sql.ErrNoRows):
			return Outcome{}, false, fmt.Errorf("%s: add outcome: %w", backend, err)
		}
	}
	var category string
	err := tx.QueryRowContext(ctx, `SELECT decision FROM replays WHERE id = ?`, o.ReplayID).Scan(&category)
	if errors.Is(err, sql.ErrNoRows) {
		return Outcome{}, false, fmt.Errorf("replay %q: %w", o.ReplayID, ErrNotFound)
	}
	if err != nil {
		return Outcome{}, false, fmt.Errorf("%s: add outcome: %w", backend, err)
	}
	o.ID, o.Category, o.CreatedAt = newRandomID("out_"), category, now
	var score any
	if o.Score != nil {
		score = *o.Score
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO replay_outcomes (`+outcomeCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		o.ID, o.ReplayID, o.Target, o.Verdict, score, o.Source, o.Principal, o.IdempotencyKey, o.Category, now.UnixNano()); err != nil {
		return Outcome{}, false, fmt.Errorf("%s: add outcome: %w", backend, err)
	}
	return o, true, nil
}

func sameScore(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// TallyOutcomesFrom is TallyOutcomes (shared by the SQL backends).
func TallyOutcomesFrom(ctx context.Context, db Querier, backend, target string, correct []string) ([]OutcomeTally, error) {
	in := "''"
	args := []any{}
	if len(correct) > 0 {
		in = strings.TrimSuffix(strings.Repeat("?, ", len(correct)), ", ")
		for _, c := range correct {
			args = append(args, c)
		}
	}
	args = append(args, target)
	rows, err := db.QueryContext(ctx, `SELECT category, CAST(sum(CASE WHEN verdict IN (`+in+`) THEN 1 ELSE 0 END) AS BIGINT), count(*) FROM replay_outcomes WHERE target = ? GROUP BY category ORDER BY category`, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: tally outcomes: %w", backend, err)
	}
	defer rows.Close()
	var out []OutcomeTally
	for rows.Next() {
		var t OutcomeTally
		if err := rows.Scan(&t.Category, &t.Correct, &t.Total); err != nil {
			return nil, fmt.Errorf("%s: tally outcomes: %w", backend, err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
