// The --quick settings of gshare-demo.
#include "gshare/demo/options.h"

namespace gshare::demo {

void ApplyQuick(DemoOptions& o) {
  o.mix = "cnn=3,bert=2,llm=1";
  o.gpu_memory = "3GiB";
  o.simcuda_memory = "";  // the quotas fit on device 0: no stop-gap needed
  o.trace_seconds = 40;
  o.time_compression = 2;
}

void ApplyRealGpu(DemoOptions& o) {
  o.slos_ms = "cnn=100,bert=100,llm=1000";
  if (o.quick) o.gpu_memory = "1536MiB";
}

}  // namespace gshare::demo
