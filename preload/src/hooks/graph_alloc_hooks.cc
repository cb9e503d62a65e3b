// Graph memory-allocation nodes (cuGraphAddMemAllocNode, and cuGraphAddNode(_v2),
// cuGraphNodeSetParams, cuGraphExecNodeSetParams with CU_GRAPH_NODE_TYPE_MEM_ALLOC): the pool
// location and the access descriptors name the application's one device by its CUdevice or
// ordinal 0 (hooks/device_view.h). They are passed as the physical GPU; another device id is
// CUDA_ERROR_INVALID_DEVICE; host locations pass unchanged. The parameters are copied for the
// driver, and the allocation's address (an out field) is copied back. Other node types pass
// through untouched. Graph construction, not submission: nothing here is on the hot path.
#include <vector>

#include "hooks/device_view.h"
#include "hooks/export.h"

using gshare::preload::RealDriver;
using gshare::preload::Runtime;

namespace {

// The mapped copy of one allocation node's parameters (and of its access descriptors).
template <typename Params>
struct MappedAlloc {
  Params params{};
  std::vector<CUmemAccessDesc> access;

  // Copies `in` and maps its locations; CUDA_ERROR_INVALID_DEVICE names an unseen GPU.
  CUresult Map(const Runtime& rt, const Params& in) {
    params = in;
    if (const CUresult r = gshare::preload::MapDeviceLocation(rt, &params.poolProps.location);
        r != CUDA_SUCCESS) {
      return r;
    }
    if (in.accessDescs == nullptr || in.accessDescCount == 0) return CUDA_SUCCESS;
    const CUresult r =
        gshare::preload::MapAccessDescs(rt, in.accessDescs, in.accessDescCount, &access);
    params.accessDescs = access.data();
    return r;
  }
};

// `call(params to use)` with a mapped copy of `*node` when it is a memory-allocation node (its
// dptr copied back afterwards), with `node` itself otherwise.
template <typename Call>
CUresult WithNodeParams(CUgraphNodeParams* node, Call call) {
  if (node == nullptr || node->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC) return call(node);
  const Runtime& rt = Runtime::Get();
  if (rt.memory() == nullptr) return call(node);
  CUgraphNodeParams copy = *node;
  MappedAlloc<CUDA_MEM_ALLOC_NODE_PARAMS_v2> mapped;
  if (const CUresult r = mapped.Map(rt, node->alloc); r != CUDA_SUCCESS) return r;
  copy.alloc = mapped.params;
  const CUresult r = call(&copy);
  node->alloc.dptr = copy.alloc.dptr;
  return r;
}

// The real `member`, or null with the error to return in *error.
template <typename Fn>
Fn Real(Fn RealDriver::*member, CUresult* error) {
  const Runtime& rt = Runtime::Get();
  *error = rt.status();
  if (*error != CUDA_SUCCESS) return nullptr;
  const Fn fn = rt.real().*member;
  if (fn == nullptr)
    *error = rt.driver_loaded() ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
  return fn;
}

}  // namespace

extern "C" {

GSHARE_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                              const CUgraphNode* dependencies,
                                              size_t numDependencies,
                                              CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  CUresult r = CUDA_SUCCESS;
  const auto fn = Real(&RealDriver::cuGraphAddMemAllocNode, &r);
  if (fn == nullptr) return r;
  const Runtime& rt = Runtime::Get();
  if (nodeParams == nullptr || rt.memory() == nullptr) {
    return fn(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
  }
  MappedAlloc<CUDA_MEM_ALLOC_NODE_PARAMS> mapped;
  if ((r = mapped.Map(rt, *nodeParams)) != CUDA_SUCCESS) return r;
  r = fn(phGraphNode, hGraph, dependencies, numDependencies, &mapped.params);
  nodeParams->dptr = mapped.params.dptr;
  return r;
}

GSHARE_EXPORT CUresult cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                      const CUgraphNode* dependencies, size_t numDependencies,
                                      CUgraphNodeParams* nodeParams) {
  CUresult r = CUDA_SUCCESS;
  const auto fn = Real(&RealDriver::cuGraphAddNode, &r);
  if (fn == nullptr) return r;
  return WithNodeParams(nodeParams, [&](CUgraphNodeParams* p) {
    return fn(phGraphNode, hGraph, dependencies, numDependencies, p);
  });
}

GSHARE_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph,
                                         const CUgraphNode* dependencies,
                                         const CUgraphEdgeData* dependencyData,
                                         size_t numDependencies, CUgraphNodeParams* nodeParams) {
  CUresult r = CUDA_SUCCESS;
  const auto fn = Real(&RealDriver::cuGraphAddNode_v2, &r);
  if (fn == nullptr) return r;
  return WithNodeParams(nodeParams, [&](CUgraphNodeParams* p) {
    return fn(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, p);
  });
}

GSHARE_EXPORT CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  CUresult r = CUDA_SUCCESS;
  const auto fn = Real(&RealDriver::cuGraphNodeSetParams, &r);
  if (fn == nullptr) return r;
  return WithNodeParams(nodeParams, [&](CUgraphNodeParams* p) { return fn(hNode, p); });
}

GSHARE_EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                CUgraphNodeParams* nodeParams) {
  CUresult r = CUDA_SUCCESS;
  const auto fn = Real(&RealDriver::cuGraphExecNodeSetParams, &r);
  if (fn == nullptr) return r;
  return WithNodeParams(nodeParams, [&](CUgraphNodeParams* p) { return fn(hGraphExec, hNode, p); });
}

}  // extern "C"
