#!/usr/bin/env bash
# The course's checks on a CUDA machine, as one script; a summary goes to $OUT/results.md (copy it
# into benchmarks/RESULTS_gpu.md). Steps, in order (name some to run only those; default: all but cpu-nbval):
#   tests      the `gpu`-marked tests: every Core path on the GPU against the CPU, and notebook 10's GPU
#              profile (course_utils.gpt.gpu_profile) trained in full: val loss >= 0.3 nats below the CPU
#              recipe's in <= 90 s of training (its line "gpu profile: ..." is copied to the summary);
#   nbval      nbval over every notebook computing on the GPU (stored outputs must match; 10 trains
#              the GPU profile in its profile cell, whose output is not compared);
#   compile    whether torch.compile pays: the GPU profile trained again, compiled (compilation timed
#              with it), to set beside the uncompiled run of `tests`;
#   cpu-nbval  nbval again with COURSE_DEVICE=cpu on the machine's own processor (a second CPU model).
# Run from the repository root with the test packages importable (`make setup-test`, or the wheels
# named in RESULTS_gpu.md on a machine without network). Logs go to $OUT (default gpu-logs/).
# Limits: tests 200 s, compile 150 s, nbval 330 s, cpu-nbval 220 s (two device calls if one allows 10 minutes).
set -uo pipefail
out=${OUT:-gpu-logs}
mkdir -p "$out"
steps=${*:-tests compile nbval}
summary="$out/results.md"
python3 -c 'import platform, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "python", platform.python_version())
print("gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
print("cpu threads", torch.get_num_threads())' 2>&1 | tee "$out/machine.txt"
grep -m1 "model name" /proc/cpuinfo | tee -a "$out/machine.txt"
{ echo "# gpu_check.sh, $(date -u '+%Y-%m-%d %H:%M') UTC, commit $(git rev-parse --short HEAD 2>/dev/null)"
  sed 's/^/    /' "$out/machine.txt"; echo; echo "| step | exit | seconds | result |"; echo "|---|---|---|---|"; } > "$summary"
status=0
run() {  # run NAME LIMIT LOG COMMAND...: time it, keep its log, add a row to the summary
  local name=$1 limit=$2 log=$3; shift 3
  local start=$SECONDS
  timeout "$limit" "$@" > "$out/$log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || status=1
  local last; last=$(grep -E "passed|failed|error|skipped" "$out/$log" | tail -1)
  echo "| $name | $rc | $((SECONDS - start)) | ${last:-see $log} |" >> "$summary"
  tail -3 "$out/$log"
}
for step in $steps; do
  case $step in
    tests)
      gpu_files=$(grep -l "mark.gpu" tests/*.py)
      # shellcheck disable=SC2086  # one argument per file
      run "pytest -m gpu" 200 gpu_tests.log python3 -m pytest -p no:cacheprovider -o addopts="-ra" -q -s -m gpu $gpu_files
      grep "^gpu profile:" "$out/gpu_tests.log" | sed 's/^/    /' >> "$summary" ;;
    nbval) run "nbval, ten notebooks on the GPU" 330 nbval_cuda.log python3 -m pytest -p no:cacheprovider -q notebooks ;;
    cpu-nbval) run "nbval, COURSE_DEVICE=cpu" 220 nbval_cpu.log env COURSE_DEVICE=cpu python3 -m pytest -p no:cacheprovider -q notebooks ;;
    compile)  # the whole profile once more, compiled: compilation counts, as it would in the notebook
      run "torch.compile: the GPU profile compiled" 150 compile.log python3 - <<'PY'
from dataclasses import replace
from course_utils.gpt.checkpoint import corpus_tokens
from course_utils.gpt.gpu_profile import GPU_PROFILE, train_profile
from course_utils.gpt.training import split_tokens
train_ids, val_ids = split_tokens(corpus_tokens())
run = train_profile(replace(GPU_PROFILE, compile=True), train_ids, val_ids, "cuda", progress=False)
print(f"compile=True: val {run['val_loss']:.3f} in {run['seconds']:.1f} s (compilation included), "
      f"{run['tokens_per_s']:,.0f} tokens/s")
PY
      grep "^compile=" "$out/compile.log" | sed 's/^/    /' >> "$summary" ;;
    *) echo "unknown step $step (tests, nbval, compile, cpu-nbval)"; exit 2 ;;
  esac
done
cat "$summary"
exit $status
