package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/droidgo/droidgo/model/tokenizer"
)

func newModelTokenizeCmd(d *deps) *cobra.Command {
	var text string
	var asJSON, bos bool
	c := &cobra.Command{
		Use:   "tokenize FILE --text TEXT [--json]",
		Short: "Tokenize text with a model's tokenizer (GGUF file or HF directory)",
		Long: `Tokenize TEXT with the tokenizer of FILE, a Spark GGUF (its tokenizer.ggml.*
metadata) or an HF model directory (tokenizer.json). Special tokens written in
TEXT, such as <think> or <｜end▁of▁sentence｜>, become their special ids. No BOS
is added unless --bos is given (llama.cpp adds one when the file's
tokenizer.ggml.add_bos_token is true; Spark's chat template writes its own).
The ids are the ones llama.cpp produces for the same file.

Prints one token per line (id, a tab, the token's text quoted as a Go string),
or with --json a single line {"tokens":[ID,...]}.`,
		Example: `  droidgo model tokenize Spark-X2.5-1.7B-Q4_K_M.gguf --text "Hello, world!"
  droidgo model tokenize ./Spark-X2.5-1.7B --text "<think>" --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("text") {
				return usageErr(errors.New("--text is required"))
			}
			if err := checkModelDir(args[0], "tokenizer.json"); err != nil {
				return err
			}
			tok, err := tokenizer.Load(args[0])
			if err != nil {
				return fmt.Errorf("load tokenizer: %w", err)
			}
			ids := tok.Encode(text, true)
			if bos {
				if tok.BOS() < 0 {
					return fmt.Errorf("%s has no BOS token to add", args[0])
				}
				ids = append([]int{tok.BOS()}, ids...)
			}
			if asJSON {
				if ids == nil {
					ids = []int{}
				}
				return json.NewEncoder(d.jsonOut()).Encode(struct {
					Tokens []int `json:"tokens"`
				}{ids})
			}
			for _, id := range ids {
				if _, err := fmt.Fprintf(d.stdout, "%d\t%s\n", id, strconv.Quote(tok.Piece(id))); err != nil {
					return err
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&text, "text", "", "the text to tokenize")
	c.Flags().BoolVar(&asJSON, "json", false, `print {"tokens":[...]}`)
	c.Flags().BoolVar(&bos, "bos", false, "prepend the BOS token")
	return c
}
