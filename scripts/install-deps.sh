#!/usr/bin/env bash
# Installs gshare's build and test dependencies from Debian packages.
# Idempotent: packages already present are skipped, and `apt-get update` runs at most once,
# only when something is missing. Needs root (or sudo) when something must be installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libboost-dev
  libspdlog-dev libfmt-dev
  libunwind-dev
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libcpp-httplib-dev
  coinor-libcbc-dev libdlib-dev
  clang libclang-rt-dev
  tmux gnuplot-nox ccache
  valgrind
  # gshare-device-plugin (gRPC), and the check of packaging/kubernetes/ against Kubernetes'
  # OpenAPI schema (shipped in kube-openapi's test data) with a JSON-schema validator
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  python3-jsonschema python3-yaml golang-k8s-kube-openapi-dev
  # the container tests (tests/container): a real runtime, podman with runc (crun cannot run on
  # cgroup v1 hybrid hosts)
  podman runc
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
else
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    SUDO="sudo"
  fi
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ ! -f /usr/local/cuda/include/cuda.h ]]; then
  echo "install-deps: the CUDA toolkit is required at /usr/local/cuda (headers and nvcc);" \
       "install CUDA 12.8+ or 13 there, or set CUDAToolkit_ROOT when configuring" >&2
  exit 1
fi
