// arm64-llama: the llama.cpp side of bench/arm64-proxy.sh. A minimal driver
// over a prebuilt libllama (npm's @node-llama-cpp/linux-arm64), built by the
// script with gcc-aarch64-linux-gnu against the headers of the same release,
// and run under qemu-aarch64 with an instruction-counting TCG plugin. It does
// the work `droidgo model bench -r 1` does, so that the two counts differ
// only by the engines: REPS prompt evaluations of PP random tokens, each from
// an empty cache with the logits of the last token, then REPS runs of TG
// single-token decodes from an empty cache with logits every token. Defaults
// as llama-bench and the peer toolkit's bench: F16 KV cache, flash attention
// auto, n_batch 2048, n_ubatch 512, mmap, a persistent 1-thread pool.
//
// usage: arm64-llama BINS_DIR MODEL.gguf PP TG REPS THREADS
//
// On stderr it names the CPU variant ggml's backend scoring loaded and the
// address range of each mapped library (hot blocks reported by
// address are mapped back to a library offset with it).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "llama.h"

static void die(const char *msg) {
	fprintf(stderr, "arm64-llama: %s\n", msg);
	exit(1);
}

static void quiet(enum ggml_log_level level, const char *text, void *data) {
	(void)data;
	if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static bool no_progress(float p, void *data) {
	(void)p;
	(void)data;
	return true;
}

static uint32_t rng = 1;

static llama_token rnd_tok(int nv) {
	rng = rng * 1103515245u + 12345u;
	return (llama_token)((rng >> 8) % (uint32_t)nv);
}

// maps prints the executable mappings of files (the libraries) as
// "map START-END OFFSET PATH"; qemu-user emulates /proc/self/maps for the
// guest, so these are guest addresses as the TCG plugins see them.
static void maps(void) {
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f) return;
	char line[1024];
	while (fgets(line, sizeof line, f)) {
		char range[64], perms[8], off[32], dev[16], path[768] = "";
		unsigned long inode;
		if (sscanf(line, "%63s %7s %31s %15s %lu %767s", range, perms, off, dev, &inode, path) < 6) continue;
		if (perms[2] != 'x' || path[0] != '/') continue;
		fprintf(stderr, "map %s %s %s\n", range, off, path);
		const char *b = strrchr(path, '/');
		b = b ? b + 1 : path;
		if (strncmp(b, "libggml-cpu-", 12) == 0) fprintf(stderr, "cpu variant %s\n", b);
	}
	fclose(f);
}

static void decode(struct llama_context *ctx, llama_token *t, int n) {
	if (llama_decode(ctx, llama_batch_get_one(t, n)) != 0) die("llama_decode failed");
}

int main(int argc, char **argv) {
	if (argc != 7) die("usage: arm64-llama BINS_DIR MODEL.gguf PP TG REPS THREADS");
	int pp = atoi(argv[3]), tg = atoi(argv[4]), reps = atoi(argv[5]), threads = atoi(argv[6]);
	if (pp < 0 || tg < 0 || reps < 1 || threads < 1 || pp > 2048 || tg > 2048) die("bad counts");
	llama_log_set(quiet, NULL);
	ggml_backend_load_all_from_path(argv[1]);
	llama_backend_init();
	ggml_backend_reg_t cpu = ggml_backend_reg_by_name("CPU");
	if (!cpu) die("no CPU backend could be loaded");

	struct llama_model_params mp = llama_model_default_params();
	mp.n_gpu_layers = 0;
	mp.progress_callback = no_progress;
	struct llama_model *m = llama_model_load_from_file(argv[2], mp);
	if (!m) die("cannot load the model");
	int nv = llama_vocab_n_tokens(llama_model_get_vocab(m));

	struct llama_context_params cp = llama_context_default_params();
	cp.n_ctx = (uint32_t)(pp > tg ? pp : tg) + 16;
	cp.n_batch = 2048;
	cp.n_ubatch = 512;
	cp.n_seq_max = 1;
	cp.n_threads = threads;
	cp.n_threads_batch = threads;
	cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
	cp.type_k = GGML_TYPE_F16;
	cp.type_v = GGML_TYPE_F16;
	cp.swa_full = false;
	struct llama_context *ctx = llama_init_from_model(m, cp);
	if (!ctx) die("cannot create a context");
	typedef struct ggml_threadpool *(*tp_new_fn)(struct ggml_threadpool_params *);
	tp_new_fn tp_new = (tp_new_fn)ggml_backend_reg_get_proc_address(cpu, "ggml_threadpool_new");
	if (tp_new) {
		struct ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
		struct ggml_threadpool *tp = tp_new(&tpp);
		if (tp) llama_attach_threadpool(ctx, tp, NULL);
	}
	maps();

	llama_token *t = malloc(sizeof(llama_token) * (size_t)(pp > 0 ? pp : 1));
	if (!t) die("out of memory");
	for (int r = 0; pp > 0 && r < reps; r++) {
		llama_memory_clear(llama_get_memory(ctx), false);
		for (int i = 0; i < pp; i++) t[i] = rnd_tok(nv);
		decode(ctx, t, pp);
		llama_synchronize(ctx);
	}
	for (int r = 0; tg > 0 && r < reps; r++) {
		llama_memory_clear(llama_get_memory(ctx), false);
		for (int i = 0; i < tg; i++) {
			llama_token tok = rnd_tok(nv);
			decode(ctx, &tok, 1);
			llama_synchronize(ctx);
		}
	}
	fprintf(stderr, "done pp %d tg %d reps %d threads %d\n", pp, tg, reps, threads);
	free(t);
	llama_free(ctx);
	llama_model_free(m);
	return 0;
}
