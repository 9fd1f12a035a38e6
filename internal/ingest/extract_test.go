package ingest

import (
	"errors"
	"strings"
	"testing"
)

func TestAccept(t *testing.T) {
	ok := map[[2]string]string{
		{"notes.txt", "assistants"}:     MediaText,
		{"README.MD", "assistants"}:     MediaMarkdown,
		{"data.json", "assistants"}:     MediaJSON,
		{"rows.csv", ""}:                MediaCSV,
		{"page.html", "assistants"}:     MediaHTML,
		{"page.HTM", "assistants"}:      MediaHTML,
		{"photo.png", "vision"}:         MediaPNG,
		{"photo.JPG", "vision"}:         MediaJPEG,
		{"photo.jpeg", "vision"}:        MediaJPEG,
		{"anim.gif", "vision"}:          MediaGIF,
		{"pic.webp", "vision"}:          MediaWebP,
		{`C:\docs\notes.txt`, "vision"}: MediaText,
	}
	for in, want := range ok {
		got, err := Accept(in[0], in[1])
		if err != nil || got != want {
			t.Errorf("Accept(%q, %q) = %q, %v; want %q", in[0], in[1], got, err, want)
		}
	}
	for _, in := range [][2]string{{"a.pdf", "assistants"}, {"a", "assistants"}, {"a.exe", "vision"}, {"photo.png", "assistants"}, {"a.svg", "vision"}} {
		_, err := Accept(in[0], in[1])
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("Accept(%q, %q): %v, want ErrUnsupported", in[0], in[1], err)
			continue
		}
		msg := err.Error()
		if strings.HasSuffix(in[0], ".png") {
			if !strings.Contains(msg, "purpose=vision") {
				t.Errorf("image without vision: %q does not say purpose=vision", msg)
			}
		} else if !strings.Contains(msg, ".txt, .md, .json, .csv, .html") || !strings.Contains(msg, ".png") {
			t.Errorf("%q does not name the accepted types", msg)
		}
	}
}

func extract(t *testing.T, mt, in string) string {
	t.Helper()
	s, err := Extract(mt, strings.NewReader(in))
	if err != nil {
		t.Fatalf("Extract(%s): %v", mt, err)
	}
	return s
}

func TestExtractText(t *testing.T) {
	if got := extract(t, MediaText, "\uFEFFhello\r\nworld"); got != "hello\nworld" {
		t.Errorf("text: %q", got)
	}
	md := "# Title\n\nSome *text* with [a link](http://x).\n"
	if got := extract(t, MediaMarkdown, md); got != md {
		t.Errorf("markdown changed: %q", got)
	}
	for name, in := range map[string]string{"latin-1": "caf\xe9", "empty": "", "blank": " \n\t ", "bom only": "\uFEFF"} {
		if _, err := Extract(MediaText, strings.NewReader(in)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := Extract(MediaPNG, strings.NewReader("\x89PNG")); !errors.Is(err, ErrUnsupported) {
		t.Errorf("image: %v", err)
	}
	if _, err := Extract("application/pdf", strings.NewReader("%PDF")); !errors.Is(err, ErrUnsupported) {
		t.Errorf("pdf: %v", err)
	}
}

func TestExtractHTML(t *testing.T) {
	in := `<!DOCTYPE html>
<html><head><title>Hidden title</title><style>body{color:red}</style><script>var secret = 1;</script></head>
<body>
<nav><a href="/">Home</a> | <a href="/docs">Docs</a></nav>
<h1>Refund   policy</h1>
<p>Refunds are issued within <b>14&nbsp;days</b> &amp; need a <a href="/r">receipt</a>.</p>
<ul><li>First item</li><li>Second <i>item</i></li></ul>
<table><tr><th>Plan</th><th>Price</th></tr><tr><td>Basic</td><td>&euro;5</td></tr></table>
<pre>line one
  line two</pre>
<p>Before<br>after the break <img src="x.png" alt="a diagram"></p>
<!-- a comment -->
<noscript>enable js</noscript>
</body></html>`
	got := extract(t, MediaHTML, in)
	for _, want := range []string{
		"Home | Docs", "Refund policy\n\n", "Refunds are issued within 14 days & need a receipt.",
		"- First item\n- Second item", "Plan Price\nBasic €5", "line one\n  line two", "Before\nafter the break a diagram",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("HTML text lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"Hidden title", "color:red", "secret", "a comment", "enable js", "<", "&amp;"} {
		if strings.Contains(got, bad) {
			t.Errorf("HTML text has %q:\n%s", bad, got)
		}
	}
	if strings.Contains(got, "\n\n\n") {
		t.Errorf("more than one blank line in a row:\n%q", got)
	}
	// Nesting is bounded (x/net/html refuses more than 512 open elements).
	deep := strings.Repeat("<div>", 100000) + "deep text" + strings.Repeat("</div>", 100000)
	if _, err := Extract(MediaHTML, strings.NewReader(deep)); !errors.Is(err, ErrInvalid) {
		t.Errorf("deep: %v", err)
	}
	deep = strings.Repeat("<div>", 400) + "deep text" + strings.Repeat("</div>", 400)
	if got := extract(t, MediaHTML, deep); got != "deep text" {
		t.Errorf("deep: %q", got)
	}
	if _, err := Extract(MediaHTML, strings.NewReader("<html><script>x()</script></html>")); !errors.Is(err, ErrInvalid) {
		t.Errorf("HTML without text: %v", err)
	}
}

func TestExtractCSV(t *testing.T) {
	in := "name,city,\"notes\"\r\nAda,London,\"wrote the first\nprogram\"\r\nLinus,,kernel\r\n,,\r\nGrace,Arlington,compilers,extra\r\n"
	got := extract(t, MediaCSV, in)
	want := "name: Ada; city: London; notes: wrote the first program\n" +
		"name: Linus; notes: kernel\n" +
		"name: Grace; city: Arlington; notes: compilers; column 4: extra\n"
	if got != want {
		t.Errorf("CSV:\n%q\nwant\n%q", got, want)
	}
	if got := extract(t, MediaCSV, "a,b,c\n"); got != "a, b, c" {
		t.Errorf("header only: %q", got)
	}
	if _, err := Extract(MediaCSV, strings.NewReader("a,\"b\nc")); err != nil && !errors.Is(err, ErrInvalid) {
		t.Errorf("broken CSV: %v", err)
	}
}

func TestExtractJSON(t *testing.T) {
	in := `{"title":"Guide","version":2.5,"tags":["a","b"],"author":{"name":"Ada","active":true,"x":null},
	"items":[{"id":1,"name":"one"},{"id":2,"parts":[]}],"empty":{},"":"blank key"}`
	got := extract(t, MediaJSON, in)
	want := "title: Guide\nversion: 2.5\ntags[0]: a\ntags[1]: b\nauthor.name: Ada\nauthor.active: true\nauthor.x: null\n" +
		"items[0].id: 1\nitems[0].name: one\nitems[1].id: 2\nitems[1].parts: []\nempty: {}\n\"\": blank key\n"
	if got != want {
		t.Errorf("JSON:\n%s\nwant\n%s", got, want)
	}
	if got := extract(t, MediaJSON, `[{"a":1},[2,3]]`); got != "[0].a: 1\n[1][0]: 2\n[1][1]: 3\n" {
		t.Errorf("array: %q", got)
	}
	if got := extract(t, MediaJSON, "{\"a\":1}\n{\"a\":2}\n"); got != "a: 1\n\na: 2\n" {
		t.Errorf("JSON lines: %q", got)
	}
	if got := extract(t, MediaJSON, `"just text"`); got != "just text\n" {
		t.Errorf("scalar: %q", got)
	}
	for _, bad := range []string{`{"a":`, `{"a" 1}`, `[1,,2]`} {
		if _, err := Extract(MediaJSON, strings.NewReader(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", bad, err)
		}
	}
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	if _, err := Extract(MediaJSON, strings.NewReader(deep)); err != nil {
		t.Errorf("deep: %v", err)
	}
}
