// Package ingest turns uploaded files into searchable chunks: Accept says
// which files are taken (documents for ingestion, images for vision), Extract
// reduces a document to readable text, Chunk cuts the text into overlapping
// token-counted pieces, and the Pipeline does all of it in the background for
// the files attached to vector stores (open, extract, chunk, embed with the
// embedding model of stored data, then complete or fail the file in the
// store), with bounded concurrency, resuming what a restart left in progress.
//
// It does not keep anything itself (internal/storage does) and does not
// choose the embedding model (internal/embedding does).
package ingest

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Errors of Accept and Extract; ingestion maps them to a failed file's code
// (unsupported_file, invalid_file).
var (
	// ErrUnsupported: a file type that is not taken (for that purpose).
	ErrUnsupported = errors.New("unsupported file")
	// ErrInvalid: a document that cannot be read as its type says (not
	// UTF-8, malformed CSV or JSON) or has no text.
	ErrInvalid = errors.New("invalid file")
)

// PurposeVision is the purpose an image is uploaded with.
const PurposeVision = "vision"

// Media types of the accepted files.
const (
	MediaText     = "text/plain"
	MediaMarkdown = "text/markdown"
	MediaJSON     = "application/json"
	MediaCSV      = "text/csv"
	MediaHTML     = "text/html"
	MediaPNG      = "image/png"
	MediaJPEG     = "image/jpeg"
	MediaGIF      = "image/gif"
	MediaWebP     = "image/webp"
)

var documents = map[string]string{
	".txt": MediaText, ".md": MediaMarkdown, ".json": MediaJSON, ".csv": MediaCSV,
	".html": MediaHTML, ".htm": MediaHTML,
}

var images = map[string]string{
	".png": MediaPNG, ".jpg": MediaJPEG, ".jpeg": MediaJPEG, ".gif": MediaGIF, ".webp": MediaWebP,
}

// acceptedTypes is what an ErrUnsupported error lists.
const acceptedTypes = "documents .txt, .md, .json, .csv, .html (.htm) for ingestion, and images .png, .jpg, .jpeg, .gif, .webp with purpose=vision"

// Accept says whether a file named filename is taken for purpose and with
// which media type (from the extension, case-insensitively): documents for
// any purpose, images only for purpose vision. Anything else is an error
// wrapping ErrUnsupported that names the accepted types.
func Accept(filename, purpose string) (mediaType string, err error) {
	ext := strings.ToLower(path.Ext(strings.ReplaceAll(filename, `\`, "/")))
	if mt, ok := documents[ext]; ok {
		return mt, nil
	}
	if mt, ok := images[ext]; ok {
		if purpose != PurposeVision {
			return "", fmt.Errorf("%w: an image (%s) is accepted with purpose=vision only (got purpose %q)", ErrUnsupported, ext, purpose)
		}
		return mt, nil
	}
	what := fmt.Sprintf("file type %q", ext)
	if ext == "" {
		what = "a file without an extension"
	}
	return "", fmt.Errorf("%w: %s is not accepted; accepted are %s", ErrUnsupported, what, acceptedTypes)
}

// IsImage reports whether a media type is one of the accepted images.
func IsImage(mediaType string) bool {
	for _, mt := range images {
		if mt == mediaType {
			return true
		}
	}
	return false
}
