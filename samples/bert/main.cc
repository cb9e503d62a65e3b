// sample-bert: serves the BERT-like encoder over the Open Inference Protocol (see bert_model.h).
#include "bert_model.h"
#include "sample/sample_main.h"

int main(int argc, char** argv) {
  return sample::RunSample(argc, argv, "bert", sample_bert::MakeBertModel);
}
