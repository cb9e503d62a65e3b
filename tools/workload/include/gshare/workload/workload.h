// Umbrella header for gshare_workload: trace parsers, the synthetic generator, the model
// catalog, model assignment and the shipped data's location. See docs/workloads.md.
#pragma once

#include "gshare/workload/assign.h"
#include "gshare/workload/azure_functions.h"
#include "gshare/workload/azure_llm.h"
#include "gshare/workload/catalog.h"
#include "gshare/workload/csv_trace.h"
#include "gshare/workload/data_dir.h"
#include "gshare/workload/result.h"
#include "gshare/workload/source.h"
#include "gshare/workload/summary.h"
#include "gshare/workload/synthetic.h"
#include "gshare/workload/trace.h"
