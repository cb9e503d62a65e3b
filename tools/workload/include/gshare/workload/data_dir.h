// Where the data shipped with gshare_workload (the Azure LLM 2023 trace, the model catalogs)
// is found at run time, so tools work from the build tree and after `cmake --install` alike.
//
// Lookup order (first directory that contains default-catalog.toml wins):
//   1. $GSHARE_WORKLOAD_DATA_DIR, if set (then it must be right: no fallback);
//   2. <directory of the running executable>/../share/gshare/workload (the install layout;
//      the build copies the data to <build>/share/gshare/workload for the same reason);
//   3. the source tree's tools/workload/data, compiled in as a last resort for development.
//
// Thread-safety: reentrant (reads the environment and /proc/self/exe).
#pragma once

#include <filesystem>

#include "gshare/workload/result.h"

namespace gshare::workload {

Result<std::filesystem::path> ShippedDataDir();

// <data dir>/azure-llm-2023/AzureLLMInferenceTrace_conv.csv
Result<std::filesystem::path> ShippedAzureLlmTracePath();

// <data dir>/default-catalog.toml: the models of DefaultCatalog().
Result<std::filesystem::path> ShippedCatalogPath();

// <data dir>/llm-catalog.toml: only the token-driven LLM models of the default catalog, for the
// Azure LLM trace (every request's execution time then follows its token counts).
Result<std::filesystem::path> ShippedLlmCatalogPath();

}  // namespace gshare::workload
