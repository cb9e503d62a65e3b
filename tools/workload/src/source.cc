// Implementation of source.h: dispatch from a format name to a parser or the generator.
#include "gshare/workload/source.h"

#include <algorithm>

#include "gshare/workload/azure_functions.h"
#include "gshare/workload/azure_llm.h"
#include "gshare/workload/csv_trace.h"
#include "gshare/workload/data_dir.h"
#include "text.h"

namespace gshare::workload {

std::string_view SourceFormats() { return "synthetic, azure-llm, azure-functions, csv"; }

Result<Trace> LoadTrace(const SourceOptions& o) {
  if (o.format == "synthetic") {
    if (Status bad = internal::ValidateParseOptions(o.parse); !bad.ok()) return bad;
    SyntheticOptions s = o.synthetic;
    s.functions = o.functions;
    s.seed = o.seed;
    s.max_requests = o.parse.max_requests;
    Result<SyntheticTrace> generated = GenerateSynthetic(s);
    if (!generated.ok()) return generated.status();
    Trace trace = std::move(generated.value().trace);
    internal::FinishTrace(o.parse, &trace);  // time compression
    return trace;
  }
  std::filesystem::path path = o.path;
  if (path.empty() && o.format == "azure-llm") {
    Result<std::filesystem::path> shipped = ShippedAzureLlmTracePath();
    if (!shipped.ok()) return shipped.status();
    path = *shipped;
  }
  if (o.format == "azure-llm") {
    AzureLlmOptions a;
    a.parse = o.parse;
    a.functions = std::max<uint32_t>(1, o.functions);
    a.seed = o.seed;
    return ParseAzureLlmTrace(path, a);
  }
  if (o.format != "azure-functions" && o.format != "csv") {
    return Fail("unknown workload format '" + o.format + "' (one of " +
                std::string(SourceFormats()) + ")");
  }
  if (path.empty()) return Fail("format " + o.format + " needs a trace file");
  if (o.format == "csv") return ParseCsvTrace(path, o.parse);
  AzureFunctionsOptions a;
  a.parse = o.parse;
  a.max_functions = o.functions;
  a.seed = o.seed;
  return ParseAzureFunctionsTrace(path, a);
}

}  // namespace gshare::workload
