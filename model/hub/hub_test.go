package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeHub imitates the hub: a model listing, resolve URLs that redirect to
// a CDN path which honours ranges and announces the sha256 as X-Linked-Etag.
type fakeHub struct {
	content   []byte
	sha       string // announced hash
	cutFirst  int    // close the first full download after this many bytes (0 = never)
	noRange   bool   // ignore Range headers
	requests  atomic.Int32
	rangeSeen atomic.Int32
}

func (h *fakeHub) handler() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/models/XHToken/Spark-X2.5-1.7B-GGUF":
			fmt.Fprint(w, `{"id":"XHToken/Spark-X2.5-1.7B-GGUF","siblings":[{"rfilename":"README.md"},{"rfilename":"Spark-X2.5-1.7B-Q8_0.gguf"},{"rfilename":"Spark-X2.5-1.7B-Q4_K_M.gguf"},{"rfilename":"Spark-X2.5-1.7B-BF16.gguf"}]}`)
		case strings.HasPrefix(r.URL.Path, "/XHToken/Spark-X2.5-1.7B-GGUF/resolve/main/"):
			w.Header().Set("X-Linked-Etag", `"`+h.sha+`"`)
			http.Redirect(w, r, "/cdn/blob", http.StatusFound)
		case r.URL.Path == "/cdn/blob":
			n := h.requests.Add(1)
			start := 0
			if rg := r.Header.Get("Range"); rg != "" && !h.noRange {
				h.rangeSeen.Add(1)
				s, _, _ := strings.Cut(strings.TrimPrefix(rg, "bytes="), "-")
				start, _ = strconv.Atoi(s)
				if start >= len(h.content) {
					w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
					return
				}
				w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(h.content)-1, len(h.content)))
				w.Header().Set("Content-Length", strconv.Itoa(len(h.content)-start))
				w.WriteHeader(http.StatusPartialContent)
			} else {
				w.Header().Set("Content-Length", strconv.Itoa(len(h.content)))
				w.WriteHeader(http.StatusOK)
			}
			body := h.content[start:]
			if n == 1 && h.cutFirst > 0 {
				w.Write(body[:h.cutFirst])
				w.(http.Flusher).Flush()
				// Hijack and close to cut the connection mid-body.
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			w.Write(body)
		default:
			http.NotFound(w, r)
		}
	}
}

func newHub(t *testing.T, h *fakeHub) *Client {
	t.Helper()
	srv := httptest.NewServer(h.handler())
	t.Cleanup(srv.Close)
	return &Client{Endpoint: srv.URL, CacheDir: t.TempDir(), Token: "t"}
}

func content(n int) ([]byte, string) {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	s := sha256.Sum256(b)
	return b, hex.EncodeToString(s[:])
}

func TestPullResumesAfterCut(t *testing.T) {
	data, sum := content(1 << 20)
	h := &fakeHub{content: data, sha: sum, cutFirst: 300_000}
	c := newHub(t, h)
	var last int64
	c.Progress = func(done, total int64) { last = done }
	p, err := c.Pull(context.Background(), DefaultRepo, DefaultQuant)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(p, "XHToken--Spark-X2.5-1.7B-GGUF/Spark-X2.5-1.7B-Q4_K_M.gguf") {
		t.Errorf("path %s", p)
	}
	got, _ := os.ReadFile(p)
	if string(got) != string(data) {
		t.Error("content differs")
	}
	if h.rangeSeen.Load() != 1 || last != int64(len(data)) {
		t.Errorf("range requests %d, progress %d", h.rangeSeen.Load(), last)
	}
	if _, err := os.Stat(p + ".part"); !os.IsNotExist(err) {
		t.Error("partial file left behind")
	}
	// Cached now: no more downloads, and listed.
	before := h.requests.Load()
	if p2, err := c.Pull(context.Background(), DefaultRepo, "q4_k_m"); err != nil || p2 != p || h.requests.Load() != before {
		t.Errorf("second pull %s %v (%d requests)", p2, err, h.requests.Load()-before)
	}
	list, err := c.List()
	if err != nil || len(list) != 1 || list[0].Repo != DefaultRepo || list[0].Size != int64(len(data)) {
		t.Errorf("list %+v %v", list, err)
	}
}

func TestResumeFromEarlierRun(t *testing.T) {
	data, sum := content(100_000)
	h := &fakeHub{content: data, sha: sum}
	c := newHub(t, h)
	dst := c.Path(DefaultRepo, "Spark-X2.5-1.7B-Q8_0.gguf")
	os.MkdirAll(dst[:strings.LastIndex(dst, "/")], 0o755)
	os.WriteFile(dst+".part", data[:40_000], 0o644)
	if _, err := c.Pull(context.Background(), DefaultRepo, "Q8_0"); err != nil {
		t.Fatal(err)
	}
	if h.rangeSeen.Load() != 1 {
		t.Error("did not resume with a range request")
	}
}

func TestServerIgnoringRangeStartsOver(t *testing.T) {
	data, sum := content(50_000)
	h := &fakeHub{content: data, sha: sum, noRange: true}
	c := newHub(t, h)
	dst := c.Path(DefaultRepo, "Spark-X2.5-1.7B-BF16.gguf")
	os.MkdirAll(dst[:strings.LastIndex(dst, "/")], 0o755)
	os.WriteFile(dst+".part", []byte("stale bytes from another version"), 0o644)
	p, err := c.Pull(context.Background(), DefaultRepo, "BF16")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != string(data) {
		t.Error("content differs")
	}
}

func TestWrongHash(t *testing.T) {
	data, _ := content(10_000)
	_, other := content(10)
	h := &fakeHub{content: data, sha: other}
	c := newHub(t, h)
	_, err := c.Pull(context.Background(), DefaultRepo, DefaultQuant)
	if !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("err = %v", err)
	}
	if l, _ := c.List(); len(l) != 0 {
		t.Errorf("a bad file was placed: %v", l)
	}
	if _, err := os.Stat(c.Path(DefaultRepo, "Spark-X2.5-1.7B-Q4_K_M.gguf") + ".part"); !os.IsNotExist(err) {
		t.Error("bad partial file kept")
	}
}

func TestErrors(t *testing.T) {
	data, sum := content(10)
	c := newHub(t, &fakeHub{content: data, sha: sum})
	if _, err := c.Pull(context.Background(), "someone/missing", "Q4_K_M"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing repo: %v", err)
	}
	if _, err := c.Pull(context.Background(), DefaultRepo, "Q2_K"); err == nil || !strings.Contains(err.Error(), "Spark-X2.5-1.7B-Q8_0.gguf") {
		t.Errorf("missing quant: %v", err)
	}
	for _, bad := range []string{"noslash", "a/b/c", "/x", "a/../b", "a/b:c:d", "a/b:q/x"} {
		if _, _, err := ParseSpec(bad); err == nil {
			t.Errorf("ParseSpec(%q) accepted", bad)
		}
	}
	if r, q, err := ParseSpec(""); err != nil || r != DefaultRepo || q != DefaultQuant {
		t.Errorf("defaults %s %s %v", r, q, err)
	}
	if r, q, _ := ParseSpec("me/m:Q8_0"); r != "me/m" || q != "Q8_0" {
		t.Errorf("%s %s", r, q)
	}
	unreach := &Client{Endpoint: "http://127.0.0.1:1", CacheDir: t.TempDir()}
	if _, err := unreach.Pull(context.Background(), DefaultRepo, DefaultQuant); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("unreachable: %v", err)
	}
}

// cdnHub is a hub imitation whose storage is another server (another
// host, as a real CDN is) with an ETag of its own.
func cdnHub(t *testing.T, data []byte, linkedSHA, cdnETag string) *Client {
	t.Helper()
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cdnETag != "" {
			w.Header().Set("ETag", `"`+cdnETag+`"`)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data)
	}))
	t.Cleanup(cdn.Close)
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/XHToken/Spark-X2.5-1.7B-GGUF/resolve/main/") {
			http.NotFound(w, r)
			return
		}
		if linkedSHA != "" {
			w.Header().Set("X-Linked-Etag", `"`+linkedSHA+`"`)
		}
		http.Redirect(w, r, cdn.URL+"/blob?sig=x", http.StatusFound)
	}))
	t.Cleanup(hub.Close)
	return &Client{Endpoint: hub.URL, CacheDir: t.TempDir()}
}

// TestCDNETagIsNotTheHash: the storage server's own ETag, 64 hex digits
// but not the file's sha256, must not override the hub's X-Linked-Etag;
// the hub's hash still catches a wrong file; a download with no hash
// announced anywhere is taken as it is.
func TestCDNETagIsNotTheHash(t *testing.T) {
	data, sum := content(20_000)
	notSHA := strings.Repeat("ab", 32) // 64 hex digits, not the sha256
	file := "Spark-X2.5-1.7B-Q4_K_M.gguf"

	c := cdnHub(t, data, sum, notSHA)
	p, err := c.Download(context.Background(), DefaultRepo, file)
	if err != nil {
		t.Fatalf("a correct download was refused: %v", err)
	}
	if got, _ := os.ReadFile(p); string(got) != string(data) {
		t.Error("content differs")
	}

	_, other := content(10)
	c = cdnHub(t, data, other, sum) // the CDN's ETag happens to be the sha256: still not the hub's word
	if _, err := c.Download(context.Background(), DefaultRepo, file); !errors.Is(err, ErrHashMismatch) {
		t.Errorf("the hub's hash was not checked: %v", err)
	}

	c = cdnHub(t, data, "", "")
	if p, err := c.Download(context.Background(), DefaultRepo, file); err != nil {
		t.Errorf("no ETag at all: %v", err)
	} else if got, _ := os.ReadFile(p); string(got) != string(data) {
		t.Error("no ETag at all: content differs")
	}

	c = cdnHub(t, data, "", notSHA)
	if _, err := c.Download(context.Background(), DefaultRepo, file); err != nil {
		t.Errorf("only a CDN ETag: %v", err)
	}
}
