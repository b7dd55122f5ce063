package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/server"
)

// serveOptions are the inputs of `droidgo serve`.
type serveOptions struct {
	d *deps

	model     string
	modelName string
	host      string
	port      int
	parallel  int
	queue     int
	apiKey    string
	maxTokens int
	maxBody   int64
	cores     coreFlags

	set map[string]bool
}

func newServeCmd(d *deps) *cobra.Command {
	o := &serveOptions{d: d}
	c := &cobra.Command{
		Use:   "serve [--model FILE] [--host 127.0.0.1] [--port 8080] [--parallel N] [--api-key KEY]",
		Short: "Serve the model over an OpenAI-compatible HTTP API",
		Long: `Serve the in-process model to other programs over the OpenAI chat-completions
API: POST /v1/chat/completions (streamed with server-sent events or whole), GET
/v1/models and GET /health. Any harness that speaks to vLLM or llama-server can
use it, and so can 'droidgo run --endpoint URL'.

Requests are rendered with the model's chat template exactly as sent. When
tools are offered, the answer is produced under the answer constraint (one
well-formed call of the offered tools) and comes back as tool_calls, recovered
by droidgo's own parser; the reasoning streams as reasoning_content, as vLLM and
SGLang send it. Thinking is on unless a request sends
"chat_template_kwargs": {"enable_thinking": false}. tool_choice "none" turns the
constraint off for a request; the constrain setting (DROIDGO_CONSTRAIN=false)
turns it off for "auto", the default.

Limits: --max-body bytes of request, --max-tokens per answer (also the default),
--parallel requests generating at once and --queue more waiting; past those the
answer is 413, 400 and 429 (with Retry-After). With --api-key (default: the
DROIDGO_API_KEY environment variable) every /v1 request must carry
"Authorization: Bearer KEY". The server listens on 127.0.0.1 unless --host says
otherwise. Each request is logged as one line on stderr. A client that goes
away stops its generation at once.

A script model (--model script:FILE) plays its turns in order, whoever asks.
Stop the server with Ctrl-C.`,
		Example: `  droidgo serve --model Spark-X2.5-1.7B-Q4_K_M.gguf --port 8080 --parallel 8
  droidgo run "Turn on Wi-Fi" --sim wifi --endpoint http://127.0.0.1:8080/v1
  curl -s http://127.0.0.1:8080/v1/chat/completions -d '{"messages":[{"role":"user","content":"Hi"}]}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.set = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { o.set[f.Name] = true })
			return runServe(o)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.model, "model", "m", "", "the model: a GGUF file, an HF directory or script:FILE (default: the pulled model)")
	f.StringVar(&o.modelName, "model-name", "", "the model's `NAME` in /v1/models and answers (default: the model file's name)")
	f.StringVar(&o.host, "host", "127.0.0.1", "the address to listen on (0.0.0.0: every interface)")
	f.IntVar(&o.port, "port", 8080, "the TCP port (0 picks a free one)")
	f.IntVar(&o.parallel, "parallel", 1, "requests generating at once (`N`)")
	f.IntVar(&o.queue, "queue", 0, "requests waiting beyond --parallel before new ones get 429 (default 4 x --parallel)")
	f.StringVar(&o.apiKey, "api-key", "", "require this bearer `KEY` on every /v1 request (default: $DROIDGO_API_KEY)")
	f.IntVar(&o.maxTokens, "max-tokens", server.DefaultMaxTokens, "the most tokens one answer may ask for, and the default")
	o.cores.add(f)
	f.Int64Var(&o.maxBody, "max-body", server.DefaultMaxBody, "the largest request body in `BYTES`")
	return c
}

// maxParallel bounds --parallel and --queue: each waiting request holds a
// connection and its body.
const maxParallel = 1024

func runServe(o *serveOptions) error {
	d := o.d
	switch {
	case o.port < 0 || o.port > 65535:
		return usageErr(fmt.Errorf("--port %d is not a TCP port", o.port))
	case o.parallel < 1 || o.parallel > maxParallel:
		return usageErr(fmt.Errorf("--parallel must be 1 to %d, not %d", maxParallel, o.parallel))
	case o.queue < 0 || o.queue > maxParallel*4:
		return usageErr(fmt.Errorf("--queue must be 0 to %d, not %d", maxParallel*4, o.queue))
	case o.maxTokens < 1:
		return usageErr(fmt.Errorf("--max-tokens must be at least 1, not %d", o.maxTokens))
	case o.maxBody < 1024:
		return usageErr(fmt.Errorf("--max-body must be at least 1024 bytes, not %d", o.maxBody))
	case o.host == "" || strings.ContainsAny(o.host, " /"):
		return usageErr(fmt.Errorf("--host %q is not an address to listen on", o.host))
	}
	cfg, err := config.Load(d.getenv)
	if err != nil {
		return usageErr(err)
	}
	if o.set["model"] {
		if err := cfg.SetFlag("model", o.model, "model"); err != nil {
			return usageErr(err)
		}
	}
	if err := o.cores.apply(cfg, func(flag string) bool { return o.set[flag] }); err != nil {
		return err
	}
	spec := cfg.Model
	if spec == "" {
		p, ok := d.defaultModel()
		if !ok {
			return usageErr(errors.New("no model: download Spark with 'droidgo pull', or pass --model FILE.gguf or --model script:FILE"))
		}
		spec = p
	}
	key := o.apiKey
	if !o.set["api-key"] {
		key = d.getenv("DROIDGO_API_KEY")
	}

	ln, err := net.Listen("tcp", net.JoinHostPort(o.host, strconv.Itoa(o.port)))
	if err != nil {
		return fmt.Errorf("listen on %s: %w", net.JoinHostPort(o.host, strconv.Itoa(o.port)), err)
	}
	defer ln.Close()
	ctx := d.ctx
	backend, err := d.openModel(ctx, spec, cfg)
	if err != nil {
		return err
	}
	if c, ok := backend.(io.Closer); ok {
		defer c.Close()
	}
	stderr := termsafe.NewWriter(d.stderr)
	var logMu sync.Mutex
	srv, err := server.New(server.Config{
		Backend: backend, ModelID: o.modelName, APIKey: key,
		Parallel: o.parallel, Queue: o.queue, MaxTokens: o.maxTokens, MaxBody: o.maxBody,
		Constrain: cfg.Constrain,
		// A request's sampling fields default to the settings' (a
		// request without a seed gets a random one).
		Sampling: model.Sampling{Temperature: cfg.Temperature, TopP: cfg.TopP},
		Now:      d.now,
		Log: func(line string) {
			logMu.Lock()
			defer logMu.Unlock()
			fmt.Fprintln(stderr, line)
		},
	})
	if err != nil {
		return err
	}
	url := "http://" + hostURL(ln.Addr()) + "/v1"
	fmt.Fprintf(d.stdout, "serving %s as %q on %s (parallel %d)\n", backend.Name(), srv.ModelID(), url, o.parallel)
	fmt.Fprintf(d.stdout, "try: droidgo run \"Turn on Wi-Fi\" --sim wifi --endpoint %s   (Ctrl-C to stop)\n", url)
	if ip := net.ParseIP(o.host); (ip == nil || !ip.IsLoopback()) && key == "" {
		fmt.Fprintf(d.stderr, "droidgo: warning: listening on %s without an API key: anyone who can reach it can use the model (set --api-key)\n", o.host)
	}
	return srv.Serve(ctx, ln)
}

// hostURL writes a listener's address for a URL: the wildcard address as
// 127.0.0.1 (what a client on this machine dials), IPv6 in brackets.
func hostURL(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip := tcp.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port))
}
