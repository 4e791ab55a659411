#!/usr/bin/env bash
# The GPU check (issue 50): the model engines' conformance suite and the packed scorer's tests on
# CUDA, then bench_scoring.py on a 7B-class random-weight Llama in bf16 (scorer against a plain
# forward pass of the same model in the same run, P(Yes) against one by one, a sweep of tokens
# per pass) and in fp32 (the P(Yes) check without bf16 rounding). Written for a lent machine
# with CUDA PyTorch and transformers but no registry and no compiler toolchain set up for the
# project: instead of building the package (its compiled core is not needed here), the scoring
# modules run from a copy of the source with a bare package __init__. Results go to $OUT (or
# ./gpu-check). Not part of `make test`: CI has no GPU. Timeouts add up to under 7 minutes.
# DEVICE / SIZE / ITEMS / FP32_ITEMS override the defaults (DEVICE=cpu SIZE=small tries it on a CPU).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-gpu-check}
DEVICE=${DEVICE:-cuda}
SIZE=${SIZE:-7b}
ITEMS=${ITEMS:-16}
FP32_ITEMS=${FP32_ITEMS:-4}
mkdir -p "$OUT"
PY=${PY:-python3}

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
$PY -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"

# polarmem_server/__init__.py imports the compiled core; the engines need only errors.py and scoring/
PM=$(mktemp -d)
mkdir -p "$PM/polarmem_server"
cp polarmem_server/errors.py "$PM/polarmem_server/"
cp -r polarmem_server/scoring "$PM/polarmem_server/"
: >"$PM/polarmem_server/__init__.py"
export PYTHONPATH=$PM${PYTHONPATH:+:$PYTHONPATH}

# -P: the source tree (whose package __init__ needs the compiled core) must not shadow the copy.
# The lexical and embedding engines need the core: this check is about the model engines.
POLARMEM_TEST_DEVICE=$DEVICE timeout 150 $PY -P -m pytest -q -W default -p no:cacheprovider -n0 \
  tests/unit/test_engine_conformance.py tests/unit/test_packed_scoring.py -k "not embedding and not lexical" \
  >"$OUT/conformance-$DEVICE.log" 2>&1
echo "conformance + packed scorer on $DEVICE: exit $?"; tail -3 "$OUT/conformance-$DEVICE.log"

timeout 170 $PY -P benchmarks/bench_scoring.py --device "$DEVICE" --size "$SIZE" --items "$ITEMS" \
  --out "$OUT/scoring-$DEVICE-$SIZE.json" 2>&1 | grep -v -E "Loading weights|Writing model"

# fp32: separates bf16 rounding from the batching arithmetic (P(Yes) within 1e-4 of one by one)
timeout 90 $PY -P benchmarks/bench_scoring.py --device "$DEVICE" --size "$SIZE" --dtype float32 --items "$FP32_ITEMS" \
  --no-kv-cache --sweep none --repeats 2 --out "$OUT/scoring-$DEVICE-$SIZE-fp32.json" 2>&1 \
  | grep -v -E "Loading weights|Writing model"
rm -rf "$PM"
