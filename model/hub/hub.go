// Package hub downloads model files from the Hugging Face hub (or a server
// that answers like it) into droidgo's cache: resumable, verified by sha256
// and placed atomically.
package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/droidgo/droidgo/internal/cachedir"
)

// Defaults of `droidgo pull`.
const (
	DefaultRepo  = "XHToken/Spark-X2.5-1.7B-GGUF"
	DefaultQuant = "Q4_K_M"
)

// Client fetches files from a hub.
type Client struct {
	// Endpoint is the hub's root URL; empty means HF_ENDPOINT or
	// https://huggingface.co.
	Endpoint string
	// Token is sent as a bearer token; empty means HF_TOKEN.
	Token string
	// CacheDir is where models are stored; empty means CacheDir(os.Getenv).
	CacheDir string
	// HTTP is the client used; nil means a client without an overall
	// timeout (downloads take long) that follows redirects.
	HTTP *http.Client
	// Progress, when set, is called as bytes arrive (done includes bytes
	// resumed from an earlier attempt; total is -1 when unknown).
	Progress func(done, total int64)
}

// Errors callers branch on.
var (
	ErrNotFound     = errors.New("not found on the hub")
	ErrHashMismatch = errors.New("sha256 mismatch")
)

// CacheDir returns droidgo's model cache: DROIDGO_CACHE, else
// $XDG_CACHE_HOME/droidgo/models, else ~/.cache/droidgo/models.
func CacheDir(getenv func(string) string) string {
	if d := getenv("DROIDGO_CACHE"); d != "" {
		return d
	}
	return filepath.Join(cachedir.Base(getenv), "models")
}

func (c *Client) endpoint() string {
	e := c.Endpoint
	if e == "" {
		e = os.Getenv("HF_ENDPOINT")
	}
	if e == "" {
		e = "https://huggingface.co"
	}
	return strings.TrimSuffix(e, "/")
}

func (c *Client) cacheDir() string {
	if c.CacheDir != "" {
		return c.CacheDir
	}
	return CacheDir(os.Getenv)
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{}
}

func (c *Client) token() string {
	if c.Token != "" {
		return c.Token
	}
	return os.Getenv("HF_TOKEN")
}

// ParseSpec splits "REPO[:QUANT]" and applies the defaults.
func ParseSpec(spec string) (repo, quant string, err error) {
	repo, quant, _ = strings.Cut(spec, ":")
	if repo == "" {
		repo = DefaultRepo
	}
	if quant == "" {
		quant = DefaultQuant
	}
	parts := strings.Split(repo, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" || strings.ContainsAny(repo, " \\?#") || strings.Contains(repo, "..") {
		return "", "", fmt.Errorf("%q is not a hub repository (want OWNER/NAME[:QUANT])", spec)
	}
	// A quantisation is one word (Q4_K_M, bf16); a second colon or a path
	// is a typo, not a file to look for.
	if strings.ContainsAny(quant, ":/\\ ?#") {
		return "", "", fmt.Errorf("%q is not a quantisation in %q (want OWNER/NAME[:QUANT], e.g. %s:%s)", quant, spec, DefaultRepo, DefaultQuant)
	}
	return repo, quant, nil
}

func (c *Client) request(ctx context.Context, method, u string, hdr map[string]string) (*http.Response, error) {
	return c.requestWith(ctx, c.http(), method, u, hdr)
}

func (c *Client) requestWith(ctx context.Context, hc *http.Client, method, u string, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	if t := c.token(); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("cannot reach %s: %v", c.endpoint(), unwrapURL(err))
	}
	return resp, nil
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func statusErr(what string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	msg := strings.TrimSpace(string(body))
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%s: the hub answered %d; set HF_TOKEN to a token with access", what, resp.StatusCode)
	case http.StatusNotFound:
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return fmt.Errorf("%s: the hub answered %s %s", what, resp.Status, msg)
}

// Files lists the files of a repository.
func (c *Client) Files(ctx context.Context, repo string) ([]string, error) {
	u := c.endpoint() + "/api/models/" + repo
	resp, err := c.request(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusErr("list "+repo, resp)
	}
	defer resp.Body.Close()
	var info struct {
		Siblings []struct {
			Name string `json:"rfilename"`
		} `json:"siblings"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&info); err != nil {
		return nil, fmt.Errorf("list %s: unreadable answer: %w", repo, err)
	}
	files := make([]string, len(info.Siblings))
	for i, s := range info.Siblings {
		files[i] = s.Name
	}
	return files, nil
}

// PickFile chooses the GGUF of a quantisation among a repository's files.
// Split GGUFs (-00001-of-0000N) are not supported.
func PickFile(files []string, quant string) (string, error) {
	var ggufs, hits []string
	q := strings.ToLower(quant)
	for _, f := range files {
		lf := strings.ToLower(f)
		if !strings.HasSuffix(lf, ".gguf") {
			continue
		}
		ggufs = append(ggufs, f)
		base := strings.TrimSuffix(filepath.Base(lf), ".gguf")
		if strings.HasSuffix(base, "-"+q) || strings.HasSuffix(base, "."+q) || strings.HasSuffix(base, "_"+q) || base == q {
			hits = append(hits, f)
		}
	}
	sort.Strings(hits)
	switch {
	case len(hits) == 1:
		return hits[0], nil
	case len(hits) > 1:
		return "", fmt.Errorf("several files match %s: %s", quant, strings.Join(hits, ", "))
	case len(ggufs) == 0:
		return "", errors.New("the repository has no GGUF files")
	}
	return "", fmt.Errorf("no GGUF file for %s; the repository has: %s", quant, strings.Join(ggufs, ", "))
}

// Path returns where a repository's file is cached.
func (c *Client) Path(repo, file string) string {
	return filepath.Join(c.cacheDir(), strings.ReplaceAll(repo, "/", "--"), filepath.FromSlash(file))
}

// Pull downloads repo's GGUF for quant unless it is cached already, and
// returns its path.
func (c *Client) Pull(ctx context.Context, repo, quant string) (string, error) {
	if p, ok := c.Find(repo, quant); ok {
		return p, nil
	}
	files, err := c.Files(ctx, repo)
	if err != nil {
		return "", err
	}
	file, err := PickFile(files, quant)
	if err != nil {
		return "", fmt.Errorf("%s: %w", repo, err)
	}
	return c.Download(ctx, repo, file)
}

// Download fetches one file of a repository into the cache, resuming a
// partial download, and verifies it against the sha256 the hub announces
// (the ETag of an LFS file). The file appears under its final name only
// once complete and verified.
func (c *Client) Download(ctx context.Context, repo, file string) (string, error) {
	if strings.Contains(file, "..") || strings.HasPrefix(file, "/") {
		return "", fmt.Errorf("refusing file name %q", file)
	}
	dst := c.Path(repo, file)
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("create cache directory: %w", err)
	}
	u := c.endpoint() + "/" + repo + "/resolve/main/" + file
	part := dst + ".part"

	// Each round resumes where the last stopped; a download cut off by the
	// network is continued a few times before giving up.
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		err := c.fetch(ctx, u, part)
		if err == nil {
			if err := os.Rename(part, dst); err != nil {
				return "", fmt.Errorf("place %s: %w", dst, err)
			}
			return dst, nil
		}
		if errors.Is(err, ErrHashMismatch) || errors.Is(err, ErrNotFound) || ctx.Err() != nil || !retryable(err) {
			return "", err
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
	return "", fmt.Errorf("download %s: giving up: %w", file, lastErr)
}

type retryableErr struct{ error }

func (e retryableErr) Unwrap() error { return e.error }

func retryable(err error) bool {
	var r retryableErr
	return errors.As(err, &r)
}

// fetch continues the download into part and verifies the whole file.
func (c *Client) fetch(ctx context.Context, u, part string) error {
	f, err := os.OpenFile(part, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", part, err)
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	hdr := map[string]string{}
	if have > 0 {
		hdr["Range"] = "bytes=" + strconv.FormatInt(have, 10) + "-"
	}
	// The hub announces an LFS file's sha256 on its redirect to the
	// storage, not on the final answer. Only the hub's own answers speak
	// for the file: a storage server's (CDN's) ETag is its own validator,
	// which may be 64 hex digits without being the sha256, so it never
	// counts, and the first sha256 the hub gives wins.
	var want string
	hubHost := hostOf(u)
	fromHub := func(resp *http.Response) {
		if want == "" && resp != nil && resp.Request != nil && resp.Request.URL.Host == hubHost {
			want = expectedSHA(resp.Header)
		}
	}
	hc := *c.http()
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("too many redirects")
		}
		fromHub(req.Response)
		return nil
	}
	resp, err := c.requestWith(ctx, &hc, http.MethodGet, u, hdr)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return retryableErr{err}
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		// The server ignored the range (or there was none): start over.
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		have = 0
	case http.StatusPartialContent:
		if start := rangeStart(resp.Header.Get("Content-Range")); start != have {
			return fmt.Errorf("the hub resumed at byte %d, not %d", start, have)
		}
	case http.StatusRequestedRangeNotSatisfiable:
		// What we have is already the whole file (or garbage); verify it.
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return retryableErr{statusErr("download", resp)}
	default:
		return statusErr("download "+u, resp)
	}
	fromHub(resp)
	total := int64(-1)
	if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable && resp.ContentLength >= 0 {
		total = have + resp.ContentLength
	}
	if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		w := &progressWriter{w: f, done: have, total: total, report: c.Progress}
		if _, err := io.Copy(w, resp.Body); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return retryableErr{fmt.Errorf("download cut off after %d bytes: %v", w.done, err)}
		}
		if total >= 0 && w.done != total {
			return retryableErr{fmt.Errorf("download cut off at %d of %d bytes", w.done, total)}
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	got, err := hashFile(f)
	if err != nil {
		return err
	}
	if want != "" && got != want {
		f.Close()
		os.Remove(part)
		return fmt.Errorf("%w: the download has sha256 %s, the hub announced %s; the partial file was removed, try again", ErrHashMismatch, got, want)
	}
	return nil
}

// hostOf returns the host (with port) of URL u, or "" when it does not
// parse.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

// expectedSHA reads the sha256 the hub announces: X-Linked-ETag for LFS
// files behind a redirect, else an ETag that looks like a sha256.
func expectedSHA(h http.Header) string {
	for _, k := range []string{"X-Linked-Etag", "Etag"} {
		v := strings.TrimPrefix(h.Get(k), "W/")
		v = strings.Trim(v, `"`)
		if len(v) == 64 {
			if _, err := hex.DecodeString(v); err == nil {
				return strings.ToLower(v)
			}
		}
	}
	return ""
}

func rangeStart(cr string) int64 {
	// "bytes 100-199/200"
	cr = strings.TrimPrefix(cr, "bytes ")
	s, _, _ := strings.Cut(cr, "-")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func hashFile(f *os.File) (string, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash download: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

type progressWriter struct {
	w           io.Writer
	done, total int64
	report      func(done, total int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	if p.report != nil {
		p.report(p.done, p.total)
	}
	return n, err
}

// Cached is a model file in the cache.
type Cached struct {
	Repo string `json:"repo"`
	File string `json:"file"`
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// List returns the GGUF files in the cache, complete ones only.
func (c *Client) List() ([]Cached, error) {
	root := c.cacheDir()
	var out []Cached
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && p == root {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(strings.ToLower(p), ".gguf") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		repoDir, file, _ := strings.Cut(filepath.ToSlash(rel), "/")
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, Cached{Repo: strings.Replace(repoDir, "--", "/", 1), File: file, Path: p, Size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list cache %s: %w", root, err)
	}
	return out, nil
}

// Find returns the cached file for repo and quant, if any.
func (c *Client) Find(repo, quant string) (string, bool) {
	list, err := c.List()
	if err != nil {
		return "", false
	}
	var files []string
	for _, m := range list {
		if m.Repo == repo {
			files = append(files, m.File)
		}
	}
	f, err := PickFile(files, quant)
	if err != nil {
		return "", false
	}
	return c.Path(repo, f), true
}
