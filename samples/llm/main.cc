// sample-llm: serves the LLM-like decoder over the Open Inference Protocol (see llm_model.h).
#include "llm_model.h"
#include "sample/sample_main.h"

int main(int argc, char** argv) {
  return sample::RunSample(argc, argv, "llm", sample_llm::MakeLlmModel);
}
