package main

import (
	"fmt"

	"github.com/droidgo/droidgo/config"
	"github.com/droidgo/droidgo/model/spark"
)

// maxBatch is the engine's largest prefill chunk (spark.MaxBatch), which
// would cut a larger --batch down silently.
const maxBatch = spark.MaxBatch

// checkThreads checks a --threads value against the one limit of the
// threads setting (config.MaxThreads), the same as the configuration file
// and DROIDGO_THREADS are checked against.
func checkThreads(n int) error {
	if err := config.CheckFlag("threads", "threads", n); err != nil {
		return usageErr(err)
	}
	return nil
}

// checkBatch checks a --batch value: 0 (the engine's default) to
// maxBatch.
func checkBatch(n int) error {
	if n < 0 || n > maxBatch {
		return usageErr(fmt.Errorf("--batch must be between 0 (the engine's default) and %d, not %d", maxBatch, n))
	}
	return nil
}
