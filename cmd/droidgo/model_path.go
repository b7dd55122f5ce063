package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/droidgo/droidgo/model/gguf"
	"github.com/droidgo/droidgo/model/spark"
)

// checkModelDir gives a directory passed as a model a clear error when it
// lacks the file the loader needs (config.json for the weights,
// tokenizer.json for the tokenizer); files and missing paths are left to
// the loaders, whose errors already name the problem.
func checkModelDir(path, need string) error {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return nil
	}
	if _, err := os.Stat(filepath.Join(path, need)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s is a directory without %s (want a Spark GGUF file or an HF checkpoint directory)", path, need)
	}
	return nil
}

// openSpark opens a model for the model commands, turning the failures a
// user can act on into sentences that say what to do.
func openSpark(path string) (*spark.Model, error) {
	if err := checkModelDir(path, "config.json"); err != nil {
		return nil, err
	}
	m, err := spark.Open(path)
	if err != nil {
		return nil, explainSplit(path, err)
	}
	return m, nil
}

// explainSplit replaces err when path is one part of a GGUF split by
// llama-gguf-split (split.count > 1): its tensors are spread over the parts,
// so the loader's complaint about a missing tensor would mislead.
func explainSplit(path string, err error) error {
	f, ferr := gguf.Open(path)
	if ferr != nil {
		return err
	}
	defer f.Close()
	n, ok := f.Uint("split.count")
	if !ok || n <= 1 {
		return err
	}
	no, _ := f.Uint("split.no")
	return fmt.Errorf("%s is part %d of a GGUF split into %d files; merge the parts first with llama.cpp's llama-gguf-split --merge", path, no+1, n)
}
