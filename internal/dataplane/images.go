package dataplane

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/junction-router/junction/internal/chat"
	"github.com/junction-router/junction/internal/storage"
)

// Files opens uploaded files by id: the images an input_image part names by
// file_id (internal/storage's Store is one).
type Files interface {
	OpenFile(ctx context.Context, id string) (io.ReadCloser, storage.File, error)
}

// MaxInlineImageBytes bounds the image bytes one request may inline (before
// base64): more is answered 413.
const MaxInlineImageBytes = 20 << 20

// purposeVision is the purpose an image referenced by file_id must have.
const purposeVision = "vision"

var fileIDKey, fileIDTail = []byte(`"file_id"`), []byte(`_id"`)

// inlineImages replaces every image part that names an uploaded file by id,
// {"type":"input_image","file_id":…} or {"type":"image_url","image_url":
// {"file_id":…}}, with {"type":"image_url","image_url":{"url":"data:<media
// type>;base64,…"}} (detail kept), so the backend receives the image itself.
// Messages without "file_id" in their bytes are not decoded: a request
// without such parts costs one byte search.
func (p *Plane) inlineImages(ctx context.Context, req *chat.Request) *Error {
	raw := req.Fields["messages"]
	// The key's tail first: bytes.Index starts from a key's first two bytes,
	// and a quote followed by f is common in JSON, an underscore rare.
	if !bytes.Contains(raw, fileIDTail) || !bytes.Contains(raw, fileIDKey) {
		return nil
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil // chat.Parse accepted it; nothing of this shape to change
	}
	in := &inliner{files: p.files, ctx: ctx, log: p.log, done: map[string]inlined{}}
	changed := false
	for i, m := range msgs {
		if !bytes.Contains(m, fileIDKey) {
			continue
		}
		out, ok, e := in.message(m, fmt.Sprintf("messages[%d]", i))
		if e != nil {
			return e
		}
		if ok {
			msgs[i], changed = out, true
		}
	}
	if !changed {
		return nil
	}
	n := len(msgs) + 1
	for _, m := range msgs {
		n += len(m)
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	req.Fields["messages"] = append(b, ']')
	return nil
}

// marshal encodes v as JSON without escaping <, > and & (the client's
// strings pass as they were sent).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

type inliner struct {
	files Files
	ctx   context.Context
	log   interface{ Error(string, ...any) }
	total int64
	done  map[string]inlined // by file id, for an image named twice
}

type inlined struct {
	url   string
	bytes int64
}

// message rewrites one message's content parts; ok is false when none
// named a file.
func (in *inliner) message(m json.RawMessage, param string) (json.RawMessage, bool, *Error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(m, &fields) != nil {
		return nil, false, nil
	}
	content := fields["content"]
	if !bytes.Contains(content, fileIDKey) {
		return nil, false, nil
	}
	var parts []json.RawMessage
	if json.Unmarshal(content, &parts) != nil {
		return nil, false, nil // a string that mentions file_id
	}
	changed := false
	for j, part := range parts {
		if !bytes.Contains(part, fileIDKey) {
			continue
		}
		out, e := in.part(part, fmt.Sprintf("%s.content[%d]", param, j))
		if e != nil {
			return nil, false, e
		}
		if out != nil {
			parts[j], changed = out, true
		}
	}
	if !changed {
		return nil, false, nil
	}
	b, err := marshal(parts)
	if err != nil {
		return nil, false, serializationError(err)
	}
	fields["content"] = b
	b, err = marshal(fields)
	if err != nil {
		return nil, false, serializationError(err)
	}
	return b, true, nil
}

// part rewrites one content part that names a file; nil when it does not.
func (in *inliner) part(raw json.RawMessage, param string) (json.RawMessage, *Error) {
	var p struct {
		Type     string          `json:"type"`
		FileID   *string         `json:"file_id"`
		Detail   string          `json:"detail"`
		ImageURL json.RawMessage `json:"image_url"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return nil, nil
	}
	var id, detail string
	switch p.Type {
	case "input_image":
		if p.FileID == nil {
			return nil, nil
		}
		id, detail, param = *p.FileID, p.Detail, param+".file_id"
	case "image_url":
		var u struct {
			URL    string  `json:"url"`
			FileID *string `json:"file_id"`
			Detail string  `json:"detail"`
		}
		if json.Unmarshal(p.ImageURL, &u) != nil || u.FileID == nil || u.URL != "" {
			return nil, nil
		}
		id, detail, param = *u.FileID, u.Detail, param+".image_url.file_id"
	default:
		return nil, nil
	}
	url, e := in.dataURL(id, param)
	if e != nil {
		return nil, e
	}
	img := map[string]string{"url": url}
	if detail != "" {
		img["detail"] = detail
	}
	b, err := marshal(map[string]any{"type": "image_url", "image_url": img})
	if err != nil {
		return nil, serializationError(err)
	}
	return b, nil
}

// dataURL reads an uploaded image into a data URL.
func (in *inliner) dataURL(id, param string) (string, *Error) {
	bad := func(status int, format string, a ...any) *Error {
		return NewError(status, TypeInvalidRequest, fmt.Sprintf(format, a...)).WithParam(param)
	}
	if strings.TrimSpace(id) == "" {
		return "", bad(http.StatusBadRequest, "file_id must name an uploaded file")
	}
	tooLarge := func() *Error {
		return bad(http.StatusRequestEntityTooLarge, "the images this request names by file_id add up to more than %d MiB; send fewer or smaller images", MaxInlineImageBytes>>20)
	}
	if d, ok := in.done[id]; ok {
		in.total += d.bytes
		if in.total > MaxInlineImageBytes {
			return "", tooLarge()
		}
		return d.url, nil
	}
	if in.files == nil {
		return "", bad(http.StatusBadRequest, "an image part names file %q, but this server keeps no files (serve it with a data directory), so file_id cannot be used; send the image as image_url with a URL or a data URL", id)
	}
	rc, f, err := in.files.OpenFile(in.ctx, id)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return "", bad(http.StatusBadRequest, "file %q not found; upload the image with purpose vision and use the id it gets", id)
		}
		if in.ctx.Err() != nil {
			return "", NewError(http.StatusBadRequest, TypeInvalidRequest, "the request was cancelled")
		}
		return "", in.readFailed(id, err)
	}
	defer rc.Close()
	if !strings.HasPrefix(f.MediaType, "image/") {
		return "", bad(http.StatusBadRequest, "file %q is not an image (%s); file_id in an image part must name a .png, .jpg, .jpeg, .gif or .webp file", id, f.MediaType)
	}
	if f.Purpose != purposeVision {
		return "", bad(http.StatusBadRequest, "file %q was uploaded with purpose %q; an image named by file_id must be uploaded with purpose vision", id, f.Purpose)
	}
	left := MaxInlineImageBytes - in.total
	if f.Bytes > left {
		return "", tooLarge()
	}
	b, err := io.ReadAll(io.LimitReader(rc, left+1))
	if err != nil {
		return "", in.readFailed(id, err)
	}
	if int64(len(b)) > left {
		return "", tooLarge()
	}
	in.total += int64(len(b))
	prefix := "data:" + f.MediaType + ";base64,"
	out := make([]byte, len(prefix)+base64.StdEncoding.EncodedLen(len(b)))
	copy(out, prefix)
	base64.StdEncoding.Encode(out[len(prefix):], b)
	u := string(out)
	in.done[id] = inlined{url: u, bytes: int64(len(b))}
	return u, nil
}

// readFailed is the 500 for a file the store could not read: the cause is
// logged (it may name server paths), the client told what failed.
func (in *inliner) readFailed(id string, err error) *Error {
	in.log.Error("reading an image named by file_id failed", "file_id", id, "error", err.Error())
	return NewError(http.StatusInternalServerError, TypeServer, fmt.Sprintf("reading file %q failed; try again", id))
}
