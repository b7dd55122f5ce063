package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/droidgo/droidgo/model/gguf"
)

// ModelTemplate returns the chat template a model path carries: a GGUF's
// tokenizer.chat_template, or for an HF directory its chat_template.jinja or
// tokenizer_config.json's chat_template (a string, or the "default" entry of
// a list). found is false when the model has none.
func ModelTemplate(path string) (tmpl string, found bool, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", false, err
	}
	if !st.IsDir() {
		f, err := gguf.Open(path)
		if err != nil {
			return "", false, err
		}
		defer f.Close()
		tmpl, found = f.String("tokenizer.chat_template")
		return tmpl, found, nil
	}
	if data, err := os.ReadFile(filepath.Join(path, "chat_template.jinja")); err == nil {
		return string(data), true, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	data, err := os.ReadFile(filepath.Join(path, "tokenizer_config.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", false, fmt.Errorf("tokenizer_config.json: %w", err)
	}
	if len(cfg.ChatTemplate) == 0 || string(cfg.ChatTemplate) == "null" {
		return "", false, nil
	}
	if json.Unmarshal(cfg.ChatTemplate, &tmpl) == nil {
		return tmpl, true, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(cfg.ChatTemplate, &named); err != nil {
		return "", false, errors.New("tokenizer_config.json: chat_template is neither a string nor a list of named templates")
	}
	for _, n := range named {
		if n.Name == "default" {
			return n.Template, true, nil
		}
	}
	return "", false, nil
}
