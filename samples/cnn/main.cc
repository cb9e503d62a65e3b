// sample-cnn: serves the CNN classifier over the Open Inference Protocol (see cnn_model.h).
#include "cnn_model.h"
#include "sample/sample_main.h"

int main(int argc, char** argv) {
  return sample::RunSample(argc, argv, "cnn", sample_cnn::MakeCnnModel);
}
