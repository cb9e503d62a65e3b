// The --quick settings of gshare-demo.
#include "gshare/demo/options.h"

namespace gshare::demo {

void ApplyQuick(DemoOptions& o) {
  o.mix = "cnn=4,bert=3,llm=1";
  o.gpu_memory = "1200MiB";
  o.trace_seconds = 40;
  o.time_compression = 2;
}

}  // namespace gshare::demo
