#!/usr/bin/env bash
# The TensorRT-LLM GPU check, in one call: the engine conformance suite with the TensorRT-LLM
# engine on both backends beside the transformers engine (bfloat16, then the cross-engine
# agreement in float32), then bench_scoring.py with --engine tensorrt_llm: the PyTorch backend on
# the 7B-class random Llama (bf16) and the TensorRT backend on the small one, each beside the
# transformers engine on the same weights and requests. Results go to $OUT (or ./gpu-check-trtllm).
#
# Needs a CUDA machine where `import tensorrt_llm` (>= 1.0) works: an NGC TensorRT-LLM container,
# or a Python 3.10/3.12 environment with the wheel. TensorRT-LLM pins its own torch and
# transformers, so it is never installed into the project's .venv (torch==2.13.0 there); set
# TRTLLM_PIP_SPEC (e.g. 'tensorrt_llm>=1.0') to let this script pip-install it where a registry
# is reachable. Carried wheels in .whl/ (grpcio-tools for the build) are used, except transformers:
# the one TensorRT-LLM was installed with stays. Not part of `make test`: CI has no GPU.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-gpu-check-trtllm}
mkdir -p "$OUT"
PY=${PY:-python3}

if ! $PY -c "import tensorrt_llm" >/dev/null 2>&1; then
  if [ -n "${TRTLLM_PIP_SPEC:-}" ]; then
    $PY -m pip install -q "$TRTLLM_PIP_SPEC" >"$OUT/pip-tensorrt_llm.log" 2>&1 || { tail -20 "$OUT/pip-tensorrt_llm.log"; exit 2; }
  else
    echo "tensorrt_llm does not import with $PY ($($PY --version 2>&1)); run this in an NGC TensorRT-LLM container"
    echo "or set TRTLLM_PIP_SPEC='tensorrt_llm>=1.0' where a registry is reachable"
    $PY -c "import tensorrt_llm" 2>&1 | tail -3
    exit 2
  fi
fi

wheels=$(ls .whl/*.whl 2>/dev/null | grep -v -i '/transformers-' || true)
if [ -n "$wheels" ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $wheels || exit 1
  export PYTHONPATH=/tmp/site
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
$PY -c "import torch, transformers, tensorrt_llm; print('torch', torch.__version__, 'transformers', transformers.__version__, 'tensorrt_llm', tensorrt_llm.__version__)" 2>&1 | tail -1

started=$(date +%s)
$PY -m pip install -q --no-build-isolation --no-deps --no-index --target /tmp/pm . >"$OUT/build.log" 2>&1 \
  || { tail -30 "$OUT/build.log"; exit 1; }
echo "built the compiled core in $(( $(date +%s) - started )) s"
export PYTHONPATH=/tmp/pm:${PYTHONPATH:-}

# -P: the source tree (no compiled core in it) must not shadow the built package. Timeouts add up
# to under 10 minutes; BACKENDS (default "pytorch tensorrt") narrows the run, FP32=1 adds the
# float32 agreement run, SIZE_PYTORCH (default 7b) sets the PyTorch-backend benchmark's model.
BACKENDS=${BACKENDS:-pytorch tensorrt}
PYTEST="$PY -P -m pytest -q -W default -p no:cacheprovider -rs"
timeout 40 $PYTEST tests/unit/test_tensorrt_llm_api.py tests/unit/test_tensorrt_llm_engine.py >"$OUT/unit.log" 2>&1
echo "signature/unit tests: exit $?"; tail -2 "$OUT/unit.log"

# the suite on the chosen backends (bfloat16, the production dtype) beside the transformers engine
selected=$(for b in $BACKENDS; do printf '%s' "tensorrt_llm-$b or [$b] or "; done)
POLARMEM_TEST_DEVICE=cuda POLARMEM_TRTLLM_DTYPE=bfloat16 timeout 220 $PYTEST tests/unit/test_engine_conformance.py \
  -k "($selected transformers-shared or transformers_p_yes) and not vlm" >"$OUT/conformance-trtllm-bf16.log" 2>&1
echo "conformance, tensorrt_llm in bfloat16 ($BACKENDS): exit $?"; tail -8 "$OUT/conformance-trtllm-bf16.log"

if [ "${FP32:-0}" = 1 ]; then  # the cross-engine agreement again in float32, where the backend supports it
  POLARMEM_TEST_DEVICE=cuda POLARMEM_TRTLLM_DTYPE=float32 timeout 120 $PYTEST tests/unit/test_engine_conformance.py \
    -k "agrees_with_transformers" >"$OUT/conformance-trtllm-fp32.log" 2>&1
  echo "agreement, tensorrt_llm in float32: exit $?"; tail -6 "$OUT/conformance-trtllm-fp32.log"
fi

# speed and P(Yes) beside the transformers engine on the same weights and requests
for backend in $BACKENDS; do
  if [ "$backend" = pytorch ]; then size=${SIZE_PYTORCH:-7b}; limit=240; else size=small; limit=90; fi
  timeout $limit $PY -P benchmarks/bench_scoring.py --device cuda --size "$size" --dtype bfloat16 --items 8 \
    --batch 128 --engine tensorrt_llm --trtllm-backend "$backend" --out "$OUT/scoring-trtllm-$backend-$size.json" 2>&1 \
    | grep -E "^(text|tensorrt_llm)|wrote|Error|error" | tail -12
  echo "bench_scoring, tensorrt_llm[$backend] on $size: exit ${PIPESTATUS[0]}"
done
