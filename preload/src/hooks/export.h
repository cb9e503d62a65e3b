// GSHARE_EXPORT marks a hook as part of libgshare.so's public (exported) surface. Everything
// else is hidden (-fvisibility=hidden and the generated version script).
#pragma once

#define GSHARE_EXPORT __attribute__((visibility("default")))
