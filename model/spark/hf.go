package spark

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/droidgo/droidgo/model/kernels"
	"github.com/droidgo/droidgo/model/quant"
	"github.com/droidgo/droidgo/model/safetensors"
)

// hfConfig is the subset of an HF config.json that Spark uses.
type hfConfig struct {
	ModelType             string                  `json:"model_type"`
	Architectures         []string                `json:"architectures"`
	HiddenSize            int                     `json:"hidden_size"`
	IntermediateSize      int                     `json:"intermediate_size"`
	NumHiddenLayers       int                     `json:"num_hidden_layers"`
	NumAttentionHeads     int                     `json:"num_attention_heads"`
	NumKeyValueHeads      int                     `json:"num_key_value_heads"`
	HeadDim               int                     `json:"head_dim"`
	VocabSize             int                     `json:"vocab_size"`
	MaxPositionEmbeddings int                     `json:"max_position_embeddings"`
	RMSNormEps            float64                 `json:"rms_norm_eps"`
	SlidingWindow         int                     `json:"sliding_window"`
	LayerTypes            []string                `json:"layer_types"`
	RopeParameters        map[string]hfRopeParams `json:"rope_parameters"`
	HiddenAct             string                  `json:"hidden_act"`
	TieWordEmbeddings     *bool                   `json:"tie_word_embeddings,omitempty"`
	HeadwiseGate          bool                    `json:"headwise_attn_output_gate"`
	GateActMode           string                  `json:"gate_attn_act_mode,omitempty"`
	// Special token ids come from the tokenizer; config.json may write
	// them as a number or a list, so they are only kept raw here.
	BOS json.RawMessage `json:"bos_token_id"`
	EOS json.RawMessage `json:"eos_token_id"`
	Pad json.RawMessage `json:"pad_token_id"`
}

type hfRopeParams struct {
	RopeTheta           float64 `json:"rope_theta"`
	PartialRotaryFactor float64 `json:"partial_rotary_factor"`
	RopeType            string  `json:"rope_type,omitempty"`
}

func isSparkHF(c *hfConfig) bool {
	if c.ModelType != "" {
		return strings.HasPrefix(strings.ToLower(c.ModelType), "spark")
	}
	for _, a := range c.Architectures {
		if strings.HasPrefix(strings.ToLower(a), "spark") {
			return true
		}
	}
	return false
}

func (h *hfConfig) toConfig() (Config, error) {
	if !isSparkHF(h) {
		return Config{}, fmt.Errorf("%w: config.json model_type %q / architectures %v is not a Spark model", ErrModel, h.ModelType, h.Architectures)
	}
	c := Config{Layers: h.NumHiddenLayers, Hidden: h.HiddenSize, FFN: h.IntermediateSize, Heads: h.NumAttentionHeads,
		KVHeads: h.NumKeyValueHeads, HeadDim: h.HeadDim, Vocab: h.VocabSize, Context: h.MaxPositionEmbeddings,
		Eps: h.RMSNormEps, Window: h.SlidingWindow}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if len(h.LayerTypes) != c.Layers {
		return c, fmt.Errorf("%w: config.json layer_types has %d entries for %d layers", ErrModel, len(h.LayerTypes), c.Layers)
	}
	for _, t := range h.LayerTypes {
		switch t {
		case "sliding_attention":
			c.Sliding = append(c.Sliding, true)
		case "full_attention":
			c.Sliding = append(c.Sliding, false)
		default:
			return c, fmt.Errorf("%w: config.json layer type %q", ErrModel, t)
		}
	}
	rp := func(kind string) (float64, int, error) {
		p, ok := h.RopeParameters[kind]
		if !ok || p.RopeTheta <= 0 {
			return 0, 0, fmt.Errorf("%w: config.json rope_parameters.%s.rope_theta is missing", ErrModel, kind)
		}
		f := p.PartialRotaryFactor
		if f == 0 {
			f = 1
		}
		return p.RopeTheta, int(float64(c.HeadDim)*f + 0.5), nil
	}
	var err error
	if c.RopeThetaFull, c.RopeDimsFull, err = rp("full_attention"); err != nil {
		return c, err
	}
	if c.RopeThetaSWA, c.RopeDimsSWA, err = rp("sliding_attention"); err != nil {
		return c, err
	}
	if h.TieWordEmbeddings != nil && !*h.TieWordEmbeddings {
		return c, fmt.Errorf("%w: untied output embeddings are not supported", ErrModel)
	}
	return c, c.Validate()
}

// OpenHF loads an HF checkpoint directory: config.json plus *.safetensors
// (bf16, f16 or f32), mapped read-only.
func OpenHF(dir string) (*Model, error) {
	if err := kernels.EnvError(); err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("open HF checkpoint: %w", err)
	}
	var hc hfConfig
	if err := json.Unmarshal(raw, &hc); err != nil {
		return nil, fmt.Errorf("%s: config.json: %w", dir, err)
	}
	cfg, err := hc.toConfig()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	paths, wanted, err := safetensorsFiles(dir)
	if err != nil {
		return nil, err
	}
	var files []*safetensors.File
	closeAll := func() error {
		var first error
		for _, f := range files {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	all := map[string]*safetensors.Tensor{}
	for _, p := range paths {
		f, err := safetensors.Open(p)
		if err != nil {
			closeAll()
			return nil, err
		}
		files = append(files, f)
		for _, t := range f.Tensors() {
			all[t.Name] = t
		}
	}
	for name, file := range wanted {
		if _, ok := all[name]; !ok {
			closeAll()
			return nil, fmt.Errorf("%s: %w: tensor %s is listed in %s but not in %s", dir, ErrModel, name, indexFile, file)
		}
	}
	src := func(name string) (quant.Type, []int, []byte, bool) {
		t, ok := all[name]
		if !ok {
			return 0, nil, nil, false
		}
		var typ quant.Type
		switch t.DType {
		case "BF16":
			typ = quant.BF16
		case "F16":
			typ = quant.F16
		case "F32":
			typ = quant.F32
		default:
			typ = quant.I8 // unsupported: reported by build
		}
		dims := make([]int, len(t.Shape))
		for i, d := range t.Shape {
			dims[len(dims)-1-i] = d
		}
		return typ, dims, t.Data, true
	}
	m, err := build(cfg, src, hfNames)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	m.Format = "hf"
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		typ, dims, data, _ := src(n)
		m.tensors = append(m.tensors, TensorInfo{n, typ, dims, int64(len(data))})
	}
	m.close = closeAll
	return m, nil
}

const indexFile = "model.safetensors.index.json"

// safetensorsFiles lists the weight files of a checkpoint: exactly those
// the index names when there is one (so a stray file in the directory
// cannot replace tensors), else every *.safetensors file. wanted maps each
// tensor the index lists to its file.
func safetensorsFiles(dir string) (paths []string, wanted map[string]string, err error) {
	raw, err := os.ReadFile(filepath.Join(dir, indexFile))
	if err == nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(raw, &idx); err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %w", dir, indexFile, err)
		}
		if len(idx.WeightMap) == 0 {
			return nil, nil, fmt.Errorf("%s: %w: %s has no weight_map", dir, ErrModel, indexFile)
		}
		seen := map[string]bool{}
		for name, f := range idx.WeightMap {
			if f == "" || filepath.Base(f) != f {
				return nil, nil, fmt.Errorf("%s: %w: %s maps %s to %q, not a file in the directory", dir, ErrModel, indexFile, name, f)
			}
			if !seen[f] {
				seen[f] = true
				paths = append(paths, filepath.Join(dir, f))
			}
		}
		sort.Strings(paths)
		return paths, idx.WeightMap, nil
	}
	if !os.IsNotExist(err) {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	paths, _ = filepath.Glob(filepath.Join(dir, "*.safetensors"))
	sort.Strings(paths)
	if len(paths) == 0 {
		return nil, nil, fmt.Errorf("%s: %w: no *.safetensors files", dir, ErrModel)
	}
	return paths, nil, nil
}

// WriteHFConfig writes c as an HF config.json into dir.
func WriteHFConfig(dir string, c Config) error {
	lt := make([]string, c.Layers)
	for i, s := range c.Sliding {
		lt[i] = "full_attention"
		if s {
			lt[i] = "sliding_attention"
		}
	}
	tie := true
	hc := hfConfig{ModelType: Arch, Architectures: []string{"SparkForCausalLM"}, HiddenSize: c.Hidden,
		IntermediateSize: c.FFN, NumHiddenLayers: c.Layers, NumAttentionHeads: c.Heads, NumKeyValueHeads: c.KVHeads,
		HeadDim: c.HeadDim, VocabSize: c.Vocab, MaxPositionEmbeddings: c.Context, RMSNormEps: c.Eps,
		SlidingWindow: c.Window, LayerTypes: lt, HiddenAct: "gelu", TieWordEmbeddings: &tie, HeadwiseGate: true,
		GateActMode: "sigmoid", BOS: json.RawMessage("0"), EOS: json.RawMessage("1"), Pad: json.RawMessage("2"),
		RopeParameters: map[string]hfRopeParams{
			"full_attention":    {RopeTheta: c.RopeThetaFull, PartialRotaryFactor: float64(c.RopeDimsFull) / float64(c.HeadDim), RopeType: "default"},
			"sliding_attention": {RopeTheta: c.RopeThetaSWA, PartialRotaryFactor: float64(c.RopeDimsSWA) / float64(c.HeadDim), RopeType: "default"},
		}}
	js, err := json.MarshalIndent(hc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), append(js, '\n'), 0o644)
}
