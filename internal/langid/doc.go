// Package langid detects the language of a text with lingua's n-gram models
// and lingua's high-accuracy algorithm (lingua-go v1.4.0,
// ComputeLanguageConfidenceValues), at a fraction of lingua's per-request
// CPU and memory.
//
// Lingua keeps every model as a map[string]float64 per language and n-gram
// length (about 15 MB of heap per language), and per request compiles no
// work away: it matches regular expressions character by character, scans
// every rule table for every word, starts a goroutine per n-gram length and
// normalises with arbitrary-precision decimals. This package reads the same
// embedded models once into one open-addressing table per n-gram length,
// keyed by a fixed 64-bit hash of the n-gram, whose postings hold each candidate
// language's log-probability; it replays lingua's rules and filters with
// Unicode range tables, and normalises in float64 with log-sum-exp.
//
// The answers are lingua's (TestAgreesWithLingua measures this on the shared
// data and edge cases); where they may differ: lingua sums floats in map
// order and divides decimals to 16 places, so confidences agree to about
// 1e-12, not bit for bit; and two distinct n-grams whose hashes collide
// (about one chance in 10^12 per lookup) would share a probability.
//
// Building the tables decodes lingua's zipped models, seconds of CPU for
// ten languages; Load keeps the built tables in a versioned, checksummed
// file per language set (DefaultCacheDir: junction/langid in the user cache
// directory, or $JUNCTION_LANGID_CACHE, "off" for none) and reads them back
// in milliseconds on a warm start. A damaged or stale file is rebuilt with a
// warning, never trusted; files are written atomically (temp file and
// rename), so concurrent processes read a whole file or none.
//
// Binaries built with -tags nolingua leave lingua out, and this package is
// empty in them.
package langid
