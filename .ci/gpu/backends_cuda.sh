#!/usr/bin/env bash
# Issue 18's GPU checks, on a machine where the project is importable (PYTHONPATH) and $OUT is set:
#   1. the four backend test files on CUDA           -> $OUT/backend_tests_cuda.log
#   2. the real-size DiffusionGemma bench (random)   -> $OUT/bench_real_size_diffusion_gemma.json (+ .log)
#   3. the real-size LLaDA stand-in bench (random)   -> $OUT/bench_real_size_llada.json (+ .log)
# Python runs with -P: the installed package, never the checkout's folders (its `kernels/` installs as
# decision_engine.kernels). Each step is time-boxed and runs whatever the others did; $OUT/backends_cuda.log says when each ended.
# On one H200 (2026-12-04, transformers 5.17): tests 32 s, diffusion-gemma bench 132 s, llada 70 s.
# Rehearse on a CPU: DECISION_ENGINE_TEST_DEVICE=cpu REAL_SIZE=tiny PYTHON=.venv/bin/python OUT=DIR bash .ci/gpu/backends_cuda.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:?set OUT to the folder that comes back}
py=${PYTHON:-python3}
device=${DECISION_ENGINE_TEST_DEVICE:-cuda}
size=${REAL_SIZE:-real}  # tiny: toy dimensions and a two-group workload, for the CPU rehearsal
gemma_load="--groups 16 --batch-sizes 8 --steps 16" llada_load="--groups 8 --batch-sizes 4 --steps 8"
[ "$size" = tiny ] && gemma_load="--groups 2 --batch-sizes 2 --steps 4" llada_load="--groups 2 --batch-sizes 2 --steps 4"
export DECISION_ENGINE_TEST_DEVICE=$device HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
work=$(mktemp -d)
log="$out/backends_cuda.log"
step() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }

step "backend tests on $device"
timeout 150 $py -P -m pytest -q -x --noconftest -p no:cacheprovider tests/test_diffusion_gemma.py \
    tests/test_masked_dllm.py tests/test_block_dllm.py tests/test_block_dllm_families.py \
    >"$out/backend_tests_cuda.log" 2>&1
step "backend tests exit $?: $(tail -1 "$out/backend_tests_cuda.log")"

step "real-size diffusion-gemma bench ($size)"
$py -P -m decision_engine.bench.real_size --kind diffusion-gemma --size "$size" --out "$work/diffusion-gemma" >>"$log" 2>&1 &&
    timeout 180 $py -P -m decision_engine.cli bench --model "$work/diffusion-gemma" --random-weights --device "$device" \
        --json $gemma_load \
        >"$out/bench_real_size_diffusion_gemma.json" 2>"$out/bench_real_size_diffusion_gemma.log"
step "diffusion-gemma bench exit $?"

step "real-size llada bench ($size)"
$py -P -m decision_engine.bench.real_size --kind llada --size "$size" --remote-code tests/remote_code \
    --out "$work/llada" >>"$log" 2>&1 &&
    timeout 120 $py -P -m decision_engine.cli bench --model "$work/llada" --trust-remote-code --random-weights \
        --device "$device" --json $llada_load \
        >"$out/bench_real_size_llada.json" 2>"$out/bench_real_size_llada.log"
step "llada bench exit $?"
rm -rf "$work"
