package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/droidgo/droidgo/model/gguf"
	"github.com/droidgo/droidgo/model/safetensors"
	"github.com/droidgo/droidgo/model/spark"
)

// rewriteGGUF copies the GGUF at src to dst through edit, which may change
// metadata (set or delete keys) and the order of the tensors.
func rewriteGGUF(t *testing.T, src, dst string, version uint32, edit func(kv map[string]any, keys []string, tensors []*gguf.Tensor) ([]string, []*gguf.Tensor)) {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kv := map[string]any{}
	keys := f.Keys()
	for _, k := range keys {
		kv[k], _ = f.Value(k)
	}
	tensors := f.Tensors()
	keys, tensors = edit(kv, keys, tensors)
	w := gguf.NewWriter()
	for _, k := range keys {
		if v, ok := kv[k]; ok {
			w.Set(k, v)
		}
	}
	for _, tn := range tensors {
		w.AddTensor(tn.Name, tn.Type, tn.Dims, tn.Data)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	img := buf.Bytes()
	if version != 0 {
		img[4] = byte(version)
	}
	if err := os.WriteFile(dst, img, 0o644); err != nil {
		t.Fatal(err)
	}
}

func logitsOf(t *testing.T, path string) []float64 {
	t.Helper()
	code, out, errs := runModelCLI(t, "model", "logits", path, "--tokens", "0,5,7,300,2", "--json", "--threads", "1")
	if code != 0 {
		t.Fatalf("logits %s: exit %d: %s", filepath.Base(path), code, errs)
	}
	var r struct {
		NVocab  int       `json:"n_vocab"`
		NTokens int       `json:"n_tokens"`
		Logits  []float64 `json:"logits"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("logits JSON: %v", err)
	}
	if r.NTokens != 5 || len(r.Logits) != r.NVocab {
		t.Fatalf("logits shape: n_tokens %d, %d logits for n_vocab %d", r.NTokens, len(r.Logits), r.NVocab)
	}
	return r.Logits
}

// TestGGUFConverterVariations loads GGUFs laid out the ways llama.cpp's
// converter and quantizer may write an official file, and checks each gives
// exactly the logits of the plain file with the same weights.
func TestGGUFConverterVariations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := filepath.Join(dir, "base.gguf")
	cfg, _ := spark.Preset("tiny")
	if err := spark.WriteRandomGGUF(base, cfg, "q8_0", 5); err != nil {
		t.Fatal(err)
	}
	want := logitsOf(t, base)
	perLayer := func(v int) []int32 {
		a := make([]int32, cfg.Layers)
		for i := range a {
			a[i] = int32(v)
		}
		return a
	}
	same := func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) { return keys, ts }
	cases := []struct {
		name    string
		version uint32
		edit    func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor)
	}{
		{"version 2", 2, same},
		{"per-layer arrays", 0, func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) {
			kv["spark2_5.feed_forward_length"] = perLayer(cfg.FFN)
			kv["spark2_5.attention.head_count"] = perLayer(cfg.Heads)
			kv["spark2_5.attention.head_count_kv"] = perLayer(cfg.KVHeads)
			return keys, ts
		}},
		{"converter general and tokenizer keys", 0, func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) {
			extra := map[string]any{
				"general.type": "model", "general.name": "Spark X2.5 1.7B", "general.size_label": "1.7B",
				"general.tags": []string{"text-generation"}, "general.file_type": uint32(7),
				"general.quantization_version": uint32(2), "tokenizer.ggml.padding_token_id": uint32(2),
				"tokenizer.ggml.add_bos_token": false, "tokenizer.ggml.add_eos_token": false,
				"tokenizer.chat_template": "{{ messages }}", "spark2_5.rope.scaling.type": "none",
			}
			for k, v := range extra {
				if _, ok := kv[k]; !ok {
					keys = append([]string{k}, keys...)
				}
				kv[k] = v
			}
			return keys, ts
		}},
		{"no vocab_size or context_length", 0, func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) {
			delete(kv, "spark2_5.vocab_size")
			delete(kv, "spark2_5.context_length")
			return keys, ts
		}},
		{"alignment 64, reversed tensor order", 0, func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) {
			kv["general.alignment"] = uint32(64)
			keys = append([]string{"general.alignment"}, keys...)
			slices.Reverse(ts)
			return keys, ts
		}},
		{"alignment 256 (v2)", 2, func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) {
			kv["general.alignment"] = uint32(256)
			return append(keys, "general.alignment"), ts
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".gguf")
			rewriteGGUF(t, base, p, c.version, c.edit)
			got := logitsOf(t, p)
			if !slices.Equal(got, want) {
				t.Errorf("logits differ from the plain file's")
			}
			code, out, errs := runModelCLI(t, "model", "info", p, "--json")
			if code != 0 || !json.Valid([]byte(out)) {
				t.Errorf("info: exit %d, %s", code, errs)
			}
		})
	}

	// Without rope.dimension_count_swa llama.cpp rotates sliding layers over
	// rope.dimension_count dims; the file then means another model.
	p := filepath.Join(dir, "noswa.gguf")
	rewriteGGUF(t, base, p, 0, func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) {
		delete(kv, "spark2_5.rope.dimension_count_swa")
		return keys, ts
	})
	code, out, errs := runModelCLI(t, "model", "info", p, "--json")
	if code != 0 {
		t.Fatalf("info: exit %d: %s", code, errs)
	}
	var info struct {
		Config spark.Config `json:"config"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatal(err)
	}
	if info.Config.RopeDimsSWA != cfg.RopeDimsFull {
		t.Errorf("rope dims swa without the key = %d, want dimension_count %d", info.Config.RopeDimsSWA, cfg.RopeDimsFull)
	}
}

// TestGGUFBadModels checks that files that are valid GGUF but not usable
// Spark models fail with exit code 1 and one line naming the problem.
func TestGGUFBadModels(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := filepath.Join(dir, "base.gguf")
	cfg, _ := spark.Preset("tiny")
	if err := spark.WriteRandomGGUF(base, cfg, "f32", 5); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want string
		edit       func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor)
	}{
		{"wrong arch", `architecture is "llama"`, func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) {
			kv["general.architecture"] = "llama"
			return keys, ts
		}},
		{"missing tensor", "blk.3.ffn_up.weight", func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) {
			return keys, slices.DeleteFunc(ts, func(t *gguf.Tensor) bool { return t.Name == "blk.3.ffn_up.weight" })
		}},
		{"missing eps", "layer_norm_rms_epsilon", func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) {
			delete(kv, "spark2_5.attention.layer_norm_rms_epsilon")
			return keys, ts
		}},
		{"varying ffn", "varies per layer", func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) {
			a := make([]int32, cfg.Layers)
			for i := range a {
				a[i] = int32(cfg.FFN + 32*(i%2))
			}
			kv["spark2_5.feed_forward_length"] = a
			return keys, ts
		}},
		{"split part", "part 1 of a GGUF split into 2 files", func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) {
			kv["split.no"], kv["split.count"], kv["split.tensors.count"] = uint16(0), uint16(2), int32(len(ts))
			keys = append(keys, "split.no", "split.count", "split.tensors.count")
			return keys, ts[:len(ts)/2]
		}},
		{"unsupported tensor type", "blk.0.ffn_up.weight has type", func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) {
			for i, tn := range ts {
				if tn.Name == "blk.0.ffn_up.weight" {
					rows := tn.Rows()
					ts[i] = &gguf.Tensor{Name: tn.Name, Type: 20, Dims: tn.Dims, Data: make([]byte, tn.Dims[0]/32*18*rows)}
				}
			}
			return keys, ts
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".gguf")
			rewriteGGUF(t, base, p, 0, c.edit)
			for _, args := range [][]string{{"info", p}, {"logits", p, "--tokens", "1"}, {"generate", p, "--tokens", "1", "-n", "1"}} {
				code, _, errs := runModelCLI(t, append([]string{"model"}, args...)...)
				if code != 1 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 || strings.Contains(errs, "goroutine") {
					t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line mentioning %q", args[0], code, errs, c.want)
				}
			}
		})
	}
}

// officialConfig is config.json as the official Spark-X2.5 checkpoint
// writes it (transformers 5 style: rope_parameters per layer type, dtype and
// torch_dtype, auto_map, keys droidgo does not use), for the tiny shape.
func officialConfig(c spark.Config, eos string) string {
	lt := make([]string, c.Layers)
	for i, s := range c.Sliding {
		lt[i] = `"full_attention"`
		if s {
			lt[i] = `"sliding_attention"`
		}
	}
	return fmt.Sprintf(`{
  "architectures": ["Spark2_5ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "auto_map": {"AutoConfig": "configuration_spark.Spark2_5Config", "AutoModelForCausalLM": "modeling_spark.Spark2_5ForCausalLM"},
  "bos_token_id": 0,
  "dtype": "bfloat16",
  "eos_token_id": %s,
  "gate_attn_act_mode": "sigmoid",
  "head_dim": %d,
  "headwise_attn_output_gate": true,
  "hidden_act": "gelu",
  "hidden_size": %d,
  "initializer_range": 0.02,
  "intermediate_size": %d,
  "layer_types": [%s],
  "max_position_embeddings": %d,
  "mlp_bias": false,
  "model_type": "spark2_5",
  "num_attention_heads": %d,
  "num_hidden_layers": %d,
  "num_key_value_heads": %d,
  "pad_token_id": 2,
  "rms_norm_eps": 1e-06,
  "rope_parameters": {
    "full_attention": {"partial_rotary_factor": %g, "rope_theta": %g, "rope_type": "default"},
    "sliding_attention": {"partial_rotary_factor": %g, "rope_theta": %g, "rope_type": "default"}
  },
  "rope_scaling": null,
  "sliding_window": %d,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "5.0.0",
  "use_cache": true,
  "vocab_size": %d
}
`, eos, c.HeadDim, c.Hidden, c.FFN, strings.Join(lt, ", "), c.Context, c.Heads, c.Layers, c.KVHeads,
		float64(c.RopeDimsFull)/float64(c.HeadDim), c.RopeThetaFull, float64(c.RopeDimsSWA)/float64(c.HeadDim), c.RopeThetaSWA,
		c.Window, c.Vocab)
}

// shard splits dir/model.safetensors into two shards with an index, as
// save_pretrained does for large checkpoints, adding the extra tensors.
func shard(t *testing.T, dir string, extra map[string]safetensors.Tensor) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	all := f.Tensors()
	parts := [][]safetensors.Tensor{nil, nil}
	weightMap := map[string]string{}
	for i, tn := range all {
		parts[i%2] = append(parts[i%2], *tn)
	}
	for _, tn := range extra {
		parts[1] = append(parts[1], tn)
	}
	for i, p := range parts {
		name := fmt.Sprintf("model-%05d-of-00002.safetensors", i+1)
		var buf bytes.Buffer
		if err := safetensors.Write(&buf, p, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, tn := range p {
			weightMap[tn.Name] = name
		}
	}
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": len(raw)}, "weight_map": weightMap})
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), idx, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
}

// TestHFCheckpointVariations loads HF directories laid out like the official
// checkpoint and checks the logits match the plain random directory's.
func TestHFCheckpointVariations(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cfg, _ := spark.Preset("tiny")
	mk := func(name string) string {
		d := filepath.Join(root, name)
		if err := spark.WriteRandomHF(d, cfg, 9); err != nil {
			t.Fatal(err)
		}
		return d
	}
	want := logitsOf(t, mk("base"))

	embed := func(d string) safetensors.Tensor {
		raw, _ := os.ReadFile(filepath.Join(d, "model.safetensors"))
		f, err := safetensors.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		e, ok := f.Tensor("model.embedding.weight")
		if !ok {
			t.Fatal("no model.embedding.weight")
		}
		return *e
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, d string)
	}{
		{"official config.json", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, "config.json"), []byte(officialConfig(cfg, "1")), 0o644)
		}},
		{"eos_token_id list", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, "config.json"), []byte(officialConfig(cfg, "[1, 2]")), 0o644)
		}},
		{"sharded with index and a stray file beside it", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, "config.json"), []byte(officialConfig(cfg, "1")), 0o644)
			stale := embed(d)
			stale.Data = make([]byte, len(stale.Data)) // would zero every logit if it were loaded
			shard(t, d, nil)
			var buf bytes.Buffer
			if err := safetensors.Write(&buf, []safetensors.Tensor{stale}, nil); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(d, "zz-stale.safetensors"), buf.Bytes(), 0o644)
		}},
		{"sharded with index, inv_freq and tied lm_head", func(t *testing.T, d string) {
			os.WriteFile(filepath.Join(d, "config.json"), []byte(officialConfig(cfg, "1")), 0o644)
			e := embed(d)
			lm := e
			lm.Name = "lm_head.weight"
			shard(t, d, map[string]safetensors.Tensor{
				"lm_head":  lm,
				"inv_freq": {Name: "model.layers.0.self_attn.rotary_emb.inv_freq", DType: "F32", Shape: []int{4}, Data: make([]byte, 16)},
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := mk(strings.ReplaceAll(c.name, " ", "_"))
			c.setup(t, d)
			if got := logitsOf(t, d); !slices.Equal(got, want) {
				t.Errorf("logits differ from the plain directory's")
			}
		})
	}
}

func TestLogitsJSONNonFinite(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	bad, err := writeLogitsJSON(&buf, 3, 2, []float32{1.5, nan, -2, inf, 0, 1e-45}, true)
	if err != nil || bad != 2 {
		t.Fatalf("bad %d, err %v", bad, err)
	}
	want := `{"n_vocab":3,"n_tokens":2,"logits":[[1.5,null,-2],[null,0,1e-45]]}` + "\n"
	if buf.String() != want {
		t.Errorf("got %s want %s", buf.String(), want)
	}
	if !json.Valid(buf.Bytes()) {
		t.Error("invalid JSON")
	}
}

// TestLogitsAllPositionsStreamed checks that --all-positions, which evaluates
// the sequence in chunks and streams each chunk's rows, gives the same rows
// whatever the chunk size, and that its last row is the last-position output.
func TestLogitsAllPositionsStreamed(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "tiny.gguf")
	cfg, _ := spark.Preset("tiny")
	if err := spark.WriteRandomGGUF(p, cfg, "f32", 2); err != nil {
		t.Fatal(err)
	}
	var toks []string
	for i := range 21 { // longer than twice the sliding window
		toks = append(toks, fmt.Sprint((i*37)%cfg.Vocab))
	}
	list := strings.Join(toks, ",")
	type result struct {
		NVocab  int         `json:"n_vocab"`
		NTokens int         `json:"n_tokens"`
		Logits  [][]float64 `json:"logits"`
	}
	run := func(batch string) result {
		code, out, errs := runModelCLI(t, "model", "logits", p, "--tokens", list, "--all-positions", "--json", "--batch", batch, "--threads", "1")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.NTokens != 21 || len(r.Logits) != 21 || len(r.Logits[20]) != r.NVocab {
			t.Fatalf("shape: %d tokens, %d rows", r.NTokens, len(r.Logits))
		}
		return r
	}
	one, chunked := run("64"), run("2")
	for i := range one.Logits {
		if !slices.Equal(one.Logits[i], chunked.Logits[i]) {
			t.Errorf("row %d differs between chunk sizes", i)
		}
	}
	if last := logitsOfTokens(t, p, list); !slices.Equal(last, one.Logits[20]) {
		t.Errorf("last row differs from the last-position logits")
	}
}

func logitsOfTokens(t *testing.T, path, list string) []float64 {
	t.Helper()
	code, out, errs := runModelCLI(t, "model", "logits", path, "--tokens", list, "--json", "--threads", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Logits []float64 `json:"logits"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return r.Logits
}

func TestModelTopK(t *testing.T) {
	t.Parallel()
	row := []float32{1, 5, 3, 5, float32(math.NaN()), 4, -1}
	if got := modelTopK(row, 3); got != "1:5.0000 3:5.0000 5:4.0000" {
		t.Errorf("top 3 = %q", got)
	}
	if got := modelTopK(row[:2], 5); got != "1:5.0000 0:1.0000" {
		t.Errorf("top of a short row = %q", got)
	}
}

// TestModelBadInput runs every model command on bad files and flags: exit 1
// for bad data, 2 for usage, one "droidgo: " line on stderr, nothing on
// stdout, never a panic.
func TestModelBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "tiny.gguf")
	cfg, _ := spark.Preset("tiny")
	if err := spark.WriteRandomGGUF(good, cfg, "f32", 1); err != nil {
		t.Fatal(err)
	}
	img, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	truncHeader := write("trunc-header.gguf", img[:1000])
	truncData := write("trunc-data.gguf", img[:len(img)-100])
	notGGUF := write("notes.txt", []byte("hello, this is not a model file\n"))
	empty := write("empty.gguf", nil)
	emptyDir := filepath.Join(dir, "emptydir")
	os.Mkdir(emptyDir, 0o755)
	msgs := write("m.json", []byte(`[{"role":"user","content":"hi"}]`))
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"info", truncHeader}, 1, "invalid GGUF"},
		{[]string{"info", truncData}, 1, "truncated"},
		{[]string{"info", notGGUF}, 1, "not a GGUF file"},
		{[]string{"info", empty}, 1, "too short"},
		{[]string{"info", emptyDir}, 1, "without config.json"},
		{[]string{"info", good, "--ctx", "0"}, 2, "--ctx"},
		{[]string{"logits", emptyDir, "--tokens", "1"}, 1, "without config.json"},
		{[]string{"logits", truncData, "--tokens", "1"}, 1, "truncated"},
		{[]string{"logits", good, "--tokens", "1 2"}, 2, "not a token id"},
		{[]string{"logits", good, "--tokens", "1,,2"}, 2, "not a token id"},
		{[]string{"logits", good, "--tokens", "1,2,"}, 2, "not a token id"},
		{[]string{"logits", good, "--tokens", "-1"}, 2, "not a token id"},
		{[]string{"logits", good, "--tokens", "99999999999999999999"}, 2, "not a token id"},
		{[]string{"logits", good, "--tokens", " "}, 2, "--tokens is required"},
		{[]string{"logits", good, "--tokens", "512"}, 1, "out of range"},
		{[]string{"logits", good, "--tokens", "1", "--threads", "-1"}, 2, "--threads"},
		{[]string{"logits", good, "--tokens", "1", "--threads", "100000"}, 2, "--threads"},
		{[]string{"logits", good, "--tokens", "1", "--batch", "-3"}, 2, "--batch"},
		{[]string{"logits", good, "--tokens", "1", "--threads", "x"}, 2, "invalid argument"},
		{[]string{"logits", good, good, "--tokens", "1"}, 2, "accepts 1 arg"},
		{[]string{"generate", good, "--tokens", "1", "-n", "-1"}, 2, "-n"},
		{[]string{"generate", good, "--tokens", "1", "-n", "1000000"}, 2, "context length"},
		{[]string{"generate", good, "--tokens", "1", "-n", "99999999999999999999"}, 2, "invalid argument"},
		{[]string{"generate", good, "--tokens", "1", "--greedy=false"}, 2, "--greedy"},
		{[]string{"generate", good}, 2, "--tokens is required"},
		{[]string{"tokenize", emptyDir, "--text", "x"}, 1, "without tokenizer.json"},
		{[]string{"tokenize", truncHeader, "--text", "x"}, 1, "invalid GGUF"},
		{[]string{"tokenize", notGGUF, "--text", "x"}, 1, "not a GGUF file"},
		{[]string{"prompt", truncHeader, "--messages", msgs}, 1, "invalid GGUF"},
		{[]string{"prompt", notGGUF, "--messages", msgs}, 1, "not a GGUF file"},
		{[]string{"prompt", good, "--messages", "-", "--tools", "-"}, 2, "standard input"},
		{[]string{"make-random", "--out", filepath.Join(dir, "x.gguf"), "--format", "onnx"}, 2, "--format"},
		{[]string{"make-random", "--out", filepath.Join(dir, "x"), "--format", "hf", "--type", "q8_0"}, 2, "bf16"},
		{[]string{"make-random", "--out", filepath.Join(dir, "missing-dir", "x.gguf")}, 1, "no such file"},
	}
	for _, c := range cases {
		code, out, errs := runModelCLI(t, append([]string{"model"}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, errs, c.code, c.msg)
		}
		if out != "" || !strings.HasPrefix(errs, "droidgo: ") || strings.Count(errs, "\n") != 1 || strings.Contains(errs, "goroutine") {
			t.Errorf("%v: stdout %q, stderr %q; want no output and one error line", c.args, out, errs)
		}
	}
}

// TestLlamaCppQuantizedModel loads the Q4_K_M file llama.cpp's quantizer
// wrote (model/gguf/testdata) through the CLI. Its weights are all 0.5, so
// every logit must be the same finite number.
func TestLlamaCppQuantizedModel(t *testing.T) {
	t.Parallel()
	p := filepath.Join("..", "..", "model", "gguf", "testdata", "llamacpp-q4_k_m.gguf")
	code, out, errs := runModelCLI(t, "model", "info", p)
	if code != 0 || !strings.Contains(out, "F32 x9 Q4_K x20 Q6_K x5") {
		t.Fatalf("info: exit %d, %s%s", code, out, errs)
	}
	got := logitsOfTokens(t, p, "0,5,7,200,2")
	for i, v := range got {
		if v != got[0] || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("logit %d = %v, logit 0 = %v", i, v, got[0])
		}
	}
}

func TestModelTokenizeBOS(t *testing.T) {
	t.Parallel()
	p := filepath.Join("..", "..", "model", "tokenizer", "testdata", "rich-vocab.gguf")
	tokens := func(args ...string) []int {
		code, out, errs := runModelCLI(t, append([]string{"model", "tokenize", p, "--text", "hi<think>", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var r struct{ Tokens []int }
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r.Tokens
	}
	plain, withBOS := tokens(), tokens("--bos")
	if len(plain) == 0 || !slices.Equal(withBOS, append([]int{0}, plain...)) {
		t.Errorf("plain %v, --bos %v", plain, withBOS)
	}
}

// TestLogitsNaNModel runs a model whose output norm holds NaN: the JSON
// stays valid (null for each non-finite logit) and stderr says so.
func TestLogitsNaNModel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := filepath.Join(dir, "base.gguf")
	cfg, _ := spark.Preset("tiny")
	if err := spark.WriteRandomGGUF(base, cfg, "f32", 1); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "nan.gguf")
	rewriteGGUF(t, base, p, 0, func(kv map[string]any, keys []string, ts []*gguf.Tensor) ([]string, []*gguf.Tensor) {
		for i, tn := range ts {
			if tn.Name == "output_norm.weight" {
				data := make([]byte, len(tn.Data))
				for j := 0; j < len(data); j += 4 {
					copy(data[j:], []byte{0x00, 0x00, 0xc0, 0x7f}) // float32 NaN
				}
				ts[i] = &gguf.Tensor{Name: tn.Name, Type: tn.Type, Dims: tn.Dims, Data: data}
			}
		}
		return keys, ts
	})
	code, out, errs := runModelCLI(t, "model", "logits", p, "--tokens", "1,2", "--json", "--all-positions")
	if code != 0 || !strings.Contains(errs, "written as null") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	var r struct {
		Logits [][]*float64 `json:"logits"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if len(r.Logits) != 2 || len(r.Logits[1]) != cfg.Vocab || r.Logits[1][0] != nil {
		t.Errorf("logits %d rows, first value %v", len(r.Logits), r.Logits[1][0])
	}
}

// BenchmarkLogitsJSON measures streaming one full-vocabulary row (131072
// logits) as JSON.
func BenchmarkLogitsJSON(b *testing.B) {
	row := make([]float32, 131072)
	for i := range row {
		row[i] = float32(math.Sin(float64(i))) * 12.345
	}
	b.SetBytes(int64(len(row) * 4))
	for b.Loop() {
		if _, err := writeLogitsJSON(io.Discard, len(row), 1, row, false); err != nil {
			b.Fatal(err)
		}
	}
}
