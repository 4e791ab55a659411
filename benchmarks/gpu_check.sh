#!/usr/bin/env bash
# The GPU check: the model engines' conformance suite on CUDA, then bench_scoring.py on a
# 7B-class random-weight Llama (bf16) and the small Qwen2-VL image path. Written for a lent
# machine that has CUDA PyTorch but cannot reach a registry: wheels it lacks travel in .whl/
# (grpcio-tools for the build; transformers to match the version tested on CPU). Results go
# to $OUT (or ./gpu-check). Not part of `make test`: CI has no GPU.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-gpu-check}
mkdir -p "$OUT"
PY=python3

if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
  # a carried transformers that does not import here (missing dependency) gives way to the local one
  $PY -c "import transformers" 2>/dev/null || rm -rf /tmp/site/transformers*
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
$PY -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"

started=$(date +%s)
$PY -m pip install -q --no-build-isolation --no-deps --no-index --target /tmp/pm . >"$OUT/build.log" 2>&1 \
  || { tail -30 "$OUT/build.log"; exit 1; }
echo "built the compiled core in $(( $(date +%s) - started )) s"
export PYTHONPATH=/tmp/pm:${PYTHONPATH:-}

# -P: the source tree (no compiled core in it) must not shadow the built package
POLARMEM_TEST_DEVICE=cuda timeout 200 $PY -P -m pytest -q -W default -p no:cacheprovider \
  tests/unit/test_engine_conformance.py -k "not embedding and not lexical" >"$OUT/conformance-cuda.log" 2>&1
echo "conformance on cuda: exit $?"; tail -5 "$OUT/conformance-cuda.log"

timeout 300 $PY -P benchmarks/bench_scoring.py --device cuda --size 7b --items 8 --batch 128 --vlm \
  --out "$OUT/scoring-cuda.json" 2>&1 | grep -v -E "Loading weights|Writing model" | tail -12

# the same 7B architecture in fp32: separates bf16 rounding from batching arithmetic
timeout 300 $PY -P benchmarks/bench_scoring.py --device cuda --size 7b --dtype float32 --items 4 --batch 128 \
  --out "$OUT/scoring-cuda-fp32.json" 2>&1 | grep -v -E "Loading weights|Writing model" | tail -5
