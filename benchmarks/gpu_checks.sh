#!/usr/bin/env bash
# The course's checks on a CUDA machine, as one script (results: benchmarks/RESULTS_gpu.md).
#  1. the `gpu`-marked tests (every Core path on the GPU against the CPU);
#  2. nbval over all ten notebooks with the course computing on the GPU (stored outputs must match);
#  3. nbval again with COURSE_DEVICE=cpu on that machine's own processor, a second CPU model to
#     compare with the one the notebooks were executed on.
# Run from the repository root with the test packages importable (`make setup-test`, or the wheels
# named in RESULTS_gpu.md on a machine without network). Logs go to $OUT (default gpu-logs/).
set -uo pipefail
out=${OUT:-gpu-logs}
mkdir -p "$out"
python3 -c 'import platform, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "python", platform.python_version())
print("gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
print("cpu threads", torch.get_num_threads())' 2>&1 | tee "$out/machine.txt"
grep -m1 "model name" /proc/cpuinfo | tee -a "$out/machine.txt"
status=0
gpu_files=$(grep -l "mark.gpu" tests/*.py)
# shellcheck disable=SC2086  # one argument per file
timeout 100 python3 -m pytest -p no:cacheprovider -o addopts="-ra" -q -m gpu $gpu_files 2>&1 | tee "$out/gpu_tests.log" || status=1
timeout 270 python3 -m pytest -p no:cacheprovider -q notebooks 2>&1 | tee "$out/nbval_cuda.log" || status=1
COURSE_DEVICE=cpu timeout 220 python3 -m pytest -p no:cacheprovider -q notebooks 2>&1 | tee "$out/nbval_cpu.log" || status=1
exit $status
