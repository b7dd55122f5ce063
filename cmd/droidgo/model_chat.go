package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/internal/termsafe"
	"github.com/droidgo/droidgo/model"
)

type chatOptions struct {
	noThink   bool
	greedy    bool
	temp      float64
	topP      float64
	topK      int
	seed      uint64
	maxTokens int
	system    string
	cores     coreFlags
	changed   func(flag string) bool
}

func newModelChatCmd(d *deps) *cobra.Command {
	var o chatOptions
	c := &cobra.Command{
		Use:   "chat FILE|DIR [--no-think] [--temp T] [--top-p P] [--seed S] [--greedy]",
		Short: "Chat with a model file in the terminal (streams thinking and answer)",
		Long: `chat runs the model in-process and talks with it: each line read from stdin
is a user message, and the reply streams as it is generated, the reasoning
first (dimmed on a terminal, after "thinking: " otherwise), then the answer.
The conversation is kept, and the KV cache with it, so each turn only
prefills what is new; a line with the cost of the turn goes to stderr.
Stdin may be a pipe. End with Ctrl-D (end of input) or /quit; Ctrl-C ends it too
(exit status 130).

Sampling defaults to Spark's official settings (temperature 1.0, top-p 0.95)
with a random seed; --greedy picks the most likely token every time.`,
		Example: `  droidgo model chat Spark-X2.5-1.7B-Q4_K_M.gguf
  echo "What is 2+2?" | droidgo model chat model.gguf --greedy --no-think`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The ranges of the temperature and top_p settings.
			if err := config.CheckFloatFlag("temperature", "temp", o.temp); err != nil {
				return usageErr(err)
			}
			if err := config.CheckFloatFlag("top_p", "top-p", o.topP); err != nil {
				return usageErr(err)
			}
			if o.topK < 0 || o.maxTokens < 1 {
				return usageErr(errors.New("--top-k must not be negative and --max-tokens must be at least 1"))
			}
			o.changed = cmd.Flags().Changed
			if !cmd.Flags().Changed("seed") {
				o.seed = uint64(time.Now().UnixNano())
			}
			return runChat(d, args[0], o)
		},
	}
	f := c.Flags()
	f.BoolVar(&o.noThink, "no-think", false, "turn the model's reasoning off")
	f.BoolVar(&o.greedy, "greedy", false, "greedy decoding (ignores --temp, --top-p, --top-k)")
	f.Float64Var(&o.temp, "temp", config.DefaultTemperature, "sampling temperature")
	f.Float64Var(&o.topP, "top-p", config.DefaultTopP, "nucleus sampling threshold")
	f.IntVar(&o.topK, "top-k", 0, "sample among the K most likely tokens only (0: no limit)")
	f.Uint64Var(&o.seed, "seed", 0, "sampling seed (default: random)")
	f.IntVar(&o.maxTokens, "max-tokens", 2048, "tokens per reply, reasoning included")
	f.StringVar(&o.system, "system", "", "a system message")
	o.cores.add(f)
	return c
}

func runChat(d *deps, path string, o chatOptions) error {
	cfg, err := config.Load(d.getenv)
	if err != nil {
		return usageErr(err)
	}
	if err := o.cores.apply(cfg, o.changed); err != nil {
		return err
	}
	b, err := openLocalWith(cfg, path, localOpts{getenv: d.getenv, meminfo: d.meminfo, warn: d.stderr})
	if err != nil {
		return err
	}
	defer b.Close()
	tty := d.isTerminal(d.stdout)
	sampling := model.Sampling{Temperature: o.temp, TopP: o.topP, TopK: o.topK, Seed: o.seed}
	if o.greedy {
		sampling = model.Sampling{}
	}
	var msgs []model.Message
	if o.system != "" {
		msgs = append(msgs, model.Message{Role: model.RoleSystem, Content: o.system})
	}
	in := bufio.NewReader(d.stdin)
	for turn := 0; ; turn++ {
		if tty {
			fmt.Fprint(d.stderr, "> ")
		}
		line, err := readLine(d.ctx, in)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if d.ctx.Err() != nil {
			return interrupted(d)
		}
		if err != nil {
			return err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if line == "/quit" || line == "/exit" {
			return nil
		}
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: line})
		req := model.ChatRequest{Messages: msgs, Think: !o.noThink, MaxTokens: o.maxTokens, Sampling: sampling}
		// Each turn gets its own draw of the generator.
		req.Sampling.Seed += uint64(turn)
		answer, stats, err := streamReply(d, b, req, tty)
		if d.ctx.Err() != nil {
			return interrupted(d)
		}
		if err != nil {
			return err
		}
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: strings.TrimSpace(answer)})
		fmt.Fprintf(d.stderr, "(prompt %d tokens, %d cached; %d generated; prefill %.2f s, %.1f tokens/s)\n",
			stats.PromptTokens, stats.CachedTokens, stats.GeneratedTokens, stats.Prefill.Seconds(), stats.DecodeRate())
	}
}

// streamReply prints one reply as it streams and returns its answer.
func streamReply(d *deps, b model.Backend, req model.ChatRequest, tty bool) (string, model.Stats, error) {
	st, err := b.Chat(d.ctx, req)
	if err != nil {
		return "", model.Stats{}, err
	}
	defer st.Close()
	const dim, reset = "\x1b[2m", "\x1b[0m"
	// The model's words go through termsafe; only droidgo's own styling
	// reaches the terminal raw, after what came before it is written out.
	out := termsafe.NewWriter(d.stdout)
	style := func(code string) {
		if out.Flush() == nil {
			io.WriteString(d.stdout, code)
		}
	}
	var answer strings.Builder
	thinking, answered := false, false
	for {
		delta, err := st.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", st.Stats(), err
		}
		if delta.Reasoning != "" {
			if !thinking {
				thinking = true
				if tty {
					style(dim)
				} else {
					fmt.Fprint(out, "thinking: ")
				}
			}
			fmt.Fprint(out, delta.Reasoning)
		}
		if delta.ReasoningClosed && thinking {
			if tty {
				style(reset)
			}
			fmt.Fprint(out, "\n\n")
			thinking = false
		}
		if delta.Content != "" {
			if !answered {
				answered = true
				delta.Content = strings.TrimLeft(delta.Content, "\n")
			}
			answer.WriteString(delta.Content)
			fmt.Fprint(out, delta.Content)
		}
	}
	if thinking && tty {
		style(reset)
	}
	fmt.Fprintln(out)
	if err := out.Flush(); err != nil {
		return "", st.Stats(), fmt.Errorf("write the reply to standard output: %w", err)
	}
	return answer.String(), st.Stats(), nil
}

// interrupted ends the chat quietly on Ctrl-C, with the shell's code for
// SIGINT.
func interrupted(d *deps) error {
	fmt.Fprintln(d.stdout)
	return exitCode(130)
}
