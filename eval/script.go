package eval

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/droidgo/droidgo/model"
	"github.com/droidgo/droidgo/model/script"
)

// ScriptModels plays scripts for an evaluation. spec is a --model value
// after "script:": a file, replayed from its first turn for every task
// and case, or a directory holding one script per task or case
// (SUITE/NAME.txt, else NAME.txt, else default.txt), optionally followed
// by "?pace=DUR" (default 0: a benchmark of scripts measures droidgo,
// not a made-up decode speed).
func ScriptModels(spec string, opts script.Options) (ModelFunc, error) {
	path, query, _ := strings.Cut(spec, "?")
	if query == "" {
		query = "pace=0"
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	open := func(file string) (model.Backend, error) {
		return script.Open(file+"?"+query, opts)
	}
	if !st.IsDir() {
		if _, err := open(path); err != nil {
			return nil, err
		}
		return func(context.Context, string, string, string) (model.Backend, func(), error) {
			b, err := open(path)
			return b, nil, err
		}, nil
	}
	return func(_ context.Context, kind, suite, name string) (model.Backend, func(), error) {
		for _, cand := range []string{filepath.Join(path, safeName(suite), safeName(name)+".txt"), filepath.Join(path, safeName(name)+".txt"), filepath.Join(path, "default.txt")} {
			if _, err := os.Stat(cand); err == nil {
				b, err := open(cand)
				return b, nil, err
			}
		}
		return nil, nil, fmt.Errorf("no script for %s %s/%s in %s (%s.txt or default.txt)", kind, suite, name, path, name)
	}, nil
}
