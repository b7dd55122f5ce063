package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newModelGenerateCmd(d *deps) *cobra.Command {
	var ef engineFlags
	var n int
	var greedy bool
	c := &cobra.Command{
		Use:   "generate FILE|DIR --tokens 0,5,7 -n 16 --greedy [--json]",
		Short: "Greedily continue a token sequence (argmax, lowest id on ties)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 0 {
				return usageErr(fmt.Errorf("-n must not be negative"))
			}
			if !greedy {
				return usageErr(fmt.Errorf("only --greedy decoding is supported here"))
			}
			e, toks, err := ef.open(args[0])
			if err != nil {
				return err
			}
			defer e.Model().Close()
			if ctxLen := e.Model().Config.Context; ctxLen > 0 && n > ctxLen-len(toks) {
				return usageErr(fmt.Errorf("-n %d plus %d prompt tokens exceed the model's context length of %d", n, len(toks), ctxLen))
			}
			out, err := e.Generate(d.ctx, toks, n)
			if err != nil {
				return err
			}
			if out == nil {
				out = []int{}
			}
			if ef.jsonOutput {
				return json.NewEncoder(d.jsonOut()).Encode(struct {
					Tokens []int `json:"tokens"`
				}{out})
			}
			s := make([]string, len(out))
			for i, t := range out {
				s[i] = fmt.Sprint(t)
			}
			fmt.Fprintln(d.stdout, strings.Join(s, " "))
			return nil
		},
	}
	ef.add(c)
	c.Flags().IntVarP(&n, "n", "n", 16, "number of tokens to generate")
	c.Flags().BoolVar(&greedy, "greedy", true, "greedy decoding (the only mode; the flag is accepted for clarity)")
	return c
}
