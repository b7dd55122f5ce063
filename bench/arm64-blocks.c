// arm64-blocks: a qemu TCG plugin of bench/arm64-proxy.sh. It counts how
// often each translation block (start address, instruction count) runs and,
// at exit, prints the blocks that executed the most instructions
// (executions x block length), which is what a cycle estimate needs; qemu's
// own hotblocks example ranks 20 blocks by executions only, which puts
// 3-instruction Go loops above a 300-instruction SMMLA kernel. One line per
// block: "blk 0xADDR INSNS EXECS", then "total INSNS" over all blocks.
// Built by the script against the plugin header of the installed qemu's
// source package: gcc -shared -fPIC -O2 -I QEMU_SRC/include/qemu.
//
// Options: top=N (default 300) blocks printed.
// The counters are added inline (not atomically): exact for one guest
// thread, which is how the proxy runs both engines.
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

struct block {
	uint64_t pc, insns, execs;
};

enum { TABLE_BITS = 21 };
static struct block *table; // open addressing, pc == 0 marks a free slot
static size_t used;
static int full;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long top = 300;

static struct block *lookup(uint64_t pc, uint64_t insns) {
	size_t mask = ((size_t)1 << TABLE_BITS) - 1;
	size_t i = (size_t)((pc ^ (insns << 40)) * 0x9E3779B97F4A7C15ull >> (64 - TABLE_BITS)) & mask;
	for (;; i = (i + 1) & mask) {
		struct block *b = &table[i];
		if (b->pc == pc && b->insns == insns) return b;
		if (b->pc == 0) {
			if (used >= mask / 2) return NULL; // keep probes short; counted as untracked
			used++;
			b->pc = pc;
			b->insns = insns;
			return b;
		}
	}
}

static uint64_t untracked;

static void trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
	(void)id;
	uint64_t pc = qemu_plugin_tb_vaddr(tb), n = qemu_plugin_tb_n_insns(tb);
	pthread_mutex_lock(&mu);
	struct block *b = pc ? lookup(pc, n) : NULL;
	if (!b) full = 1;
	pthread_mutex_unlock(&mu);
	if (b) qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->execs, 1);
	else qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &untracked, n);
}

static int by_insns(const void *x, const void *y) {
	const struct block *a = x, *b = y;
	unsigned __int128 p = (unsigned __int128)a->insns * a->execs, q = (unsigned __int128)b->insns * b->execs;
	return p > q ? -1 : p < q;
}

static void done(qemu_plugin_id_t id, void *p) {
	(void)id;
	(void)p;
	size_t n = (size_t)1 << TABLE_BITS, k = 0;
	uint64_t total = untracked;
	for (size_t i = 0; i < n; i++) {
		if (table[i].pc && table[i].execs) table[k++] = table[i];
	}
	for (size_t i = 0; i < k; i++) total += table[i].insns * table[i].execs;
	qsort(table, k, sizeof table[0], by_insns);
	char line[96];
	for (size_t i = 0; i < k && (long)i < top; i++) {
		snprintf(line, sizeof line, "blk 0x%" PRIx64 " %" PRIu64 " %" PRIu64 "\n", table[i].pc, table[i].insns, table[i].execs);
		qemu_plugin_outs(line);
	}
	snprintf(line, sizeof line, "total %" PRIu64 "%s\n", total, full ? " (table full: some blocks untracked)" : "");
	qemu_plugin_outs(line);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
	(void)info;
	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], "top=", 4) == 0 && atol(argv[i] + 4) > 0) {
			top = atol(argv[i] + 4);
		} else {
			fprintf(stderr, "arm64-blocks: unknown option %s (have: top=N)\n", argv[i]);
			return -1;
		}
	}
	table = calloc((size_t)1 << TABLE_BITS, sizeof *table);
	if (!table) return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, trans);
	qemu_plugin_register_atexit_cb(id, done, NULL);
	return 0;
}
