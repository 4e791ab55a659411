"""Which TensorRT-LLM is installed, which LLM class to use, and what to pass it.

Everything here is plain Python over version strings, checkpoint config files and keyword
dictionaries, so it is tested on machines without TensorRT-LLM (tests/unit/test_tensorrt_llm_api.py).
The rules follow TensorRT-LLM's source; each cites the file it follows (NVIDIA/TensorRT-LLM):

* 1.x: ``tensorrt_llm.LLM`` is the PyTorch-backed class (``class LLM(_TorchLLM)``,
  ``tensorrt_llm/llmapi/llm.py``), the TensorRT-engine class is ``tensorrt_llm._tensorrt_engine.LLM``
  (``tensorrt_llm/_tensorrt_engine/__init__.py``: ``from tensorrt_llm.llmapi.llm import _TrtLLM as
  LLM``). ``_TorchLLM.__init__`` refuses arguments that only ``TrtLlmArgs`` has
  (``_validate_args_for_torch_backend``); ``BaseLLM.__init__`` refuses any keyword that is not a
  field of the chosen args class ("got invalid argument").
* Before 1.0 one class served both backends through ``backend=``, and ~0.11-0.12's ``LlmArgs``
  (a dataclass in ``tensorrt_llm/llmapi/llm_utils.py``) has no ``max_batch_size``,
  ``max_seq_len``, ``gather_generation_logits`` or ``backend`` field (``cls(**kwargs)`` raises
  TypeError). Those versions are refused, naming the minimum.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

MIN_VERSION = (1, 0, 0)
MIN_VERSION_TEXT = "1.0.0"
BACKENDS = ("pytorch", "tensorrt")
DTYPES = ("float32", "float16", "bfloat16")
# TensorRT-LLM's own fallback when a config has no max_position_embeddings
# (tensorrt_llm/_torch/models/modeling_utils.py, DecoderModelForCausalLM.infer_max_seq_len).
DEFAULT_MAX_POSITIONS = 2048
# BaseLlmArgs.max_num_tokens default (tensorrt_llm/llmapi/llm_args.py); raised to max_seq_len when
# that is larger, because the PyTorch backend refuses a prompt longer than max_num_tokens unless
# chunked prefill is on (BaseLLM._check_arguments).
DEFAULT_MAX_NUM_TOKENS = 8192


# ---- version -------------------------------------------------------------------------------


def parse_version(text: str) -> tuple[int, int, int, bool]:
    """(major, minor, patch, is_release) of a TensorRT-LLM version string such as "1.0.0",
    "1.2.0rc3" or "0.21.0.dev2025"; a pre-release sorts before its release."""
    match = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?(.*)$", text or "")
    if not match:
        raise ValueError(f"cannot read the TensorRT-LLM version {text!r} (expected MAJOR.MINOR.PATCH)")
    major, minor, patch, rest = int(match[1]), int(match[2]), int(match[3] or 0), match[4].strip()
    is_release = rest == "" or rest.startswith(".post") or rest.startswith("+")
    return major, minor, patch, is_release


def is_supported(version: str) -> bool:
    major, minor, patch, is_release = parse_version(version)
    if (major, minor, patch) != MIN_VERSION:
        return (major, minor, patch) > MIN_VERSION
    return is_release  # 1.0.0rcN predates the release the rules above were checked against


def require_supported(version: str) -> str:
    """`version` itself, or ValueError naming the minimum."""
    if not is_supported(version):
        raise ValueError(
            f"engine 'tensorrt_llm' needs TensorRT-LLM >= {MIN_VERSION_TEXT}, found {version}: older "
            "releases have no separate PyTorch and TensorRT LLM classes, and 0.11-0.12 accept none of "
            "max_batch_size, max_seq_len, gather_generation_logits (pip install 'tensorrt_llm>="
            f"{MIN_VERSION_TEXT}')"
        )
    return version


def installed_version(metadata_version=None) -> str | None:
    """The installed TensorRT-LLM's version from package metadata (no import: importing
    tensorrt_llm loads CUDA libraries), or None when it is not installed."""
    from importlib import metadata

    lookup = metadata_version or metadata.version
    for name in ("tensorrt_llm", "tensorrt-llm"):
        try:
            return lookup(name)
        except metadata.PackageNotFoundError:
            continue
    return None


# ---- the checkpoint's limits ---------------------------------------------------------------


@dataclass(frozen=True)
class CheckpointLimits:
    max_positions: int  # max_position_embeddings, or TensorRT-LLM's fallback
    dtype: str  # the checkpoint's own dtype ("float32", "float16", "bfloat16")


def read_checkpoint_limits(model_path: str | Path) -> CheckpointLimits:
    """max_position_embeddings and dtype from a Hugging Face checkpoint's config.json (a
    vision-language config keeps them in text_config, as TensorRT-LLM also reads them)."""
    path = Path(model_path) / "config.json"
    try:
        config = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"model: cannot read {path} ({exc}); give a Hugging Face checkpoint directory") from exc
    text = config.get("text_config") or {}
    positions = config.get("max_position_embeddings") or text.get("max_position_embeddings") or DEFAULT_MAX_POSITIONS
    dtype = (
        config.get("torch_dtype") or config.get("dtype") or text.get("torch_dtype") or text.get("dtype") or "float32"
    )
    return CheckpointLimits(int(positions), str(dtype).replace("torch.", ""))


def resolve_dtype(requested: str, checkpoint_dtype: str) -> str:
    """An explicit dtype for the LLM: "auto" means the checkpoint's own (TensorRT-LLM's "auto"
    would turn a float32 checkpoint into float16 on the TensorRT backend)."""
    dtype = checkpoint_dtype if requested == "auto" else requested
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be auto or one of {', '.join(DTYPES)}, got {dtype!r}")
    return dtype


# ---- lengths -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LengthPlan:
    """Sequence-length limits with room for generated tokens.

    max_seq_len is prompt + generated tokens and never exceeds the model's positions (the
    PyTorch backend lowers a larger value to them: PyTorchModelEngine._init_max_seq_len,
    tensorrt_llm/_torch/pyexecutor/model_engine.py). A score generates one token, so its prompt
    may use max_seq_len - 1 tokens (= max_input_len, which the TensorRT backend enforces:
    "exceeds maximum input length"); a generate() call with max_tokens=M gets max_seq_len - M.
    """

    max_seq_len: int
    max_new_tokens: int

    @property
    def max_input_len(self) -> int:
        return self.max_seq_len - 1

    @property
    def score_prompt_tokens(self) -> int:
        return self.max_seq_len - 1

    def generation_prompt_tokens(self, max_tokens: int) -> int:
        if not 1 <= max_tokens <= self.max_new_tokens:
            raise ValueError(
                f"max_tokens must be between 1 and the engine's max_new_tokens={self.max_new_tokens}, got {max_tokens}"
            )
        return self.max_seq_len - max_tokens

    @property
    def max_num_tokens(self) -> int:
        return max(DEFAULT_MAX_NUM_TOKENS, self.max_seq_len)


def plan_lengths(max_length: int, max_positions: int, max_new_tokens: int) -> LengthPlan:
    """`max_length` (prompt + generated tokens) capped at the model's positions; refused when it
    leaves no prompt room for `max_new_tokens` generated tokens."""
    if max_length < 2:
        raise ValueError(f"max_length must be at least 2 (a prompt token and an answer token), got {max_length}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    seq = min(max_length, max_positions)
    if seq - max_new_tokens < 1:
        raise ValueError(
            f"max_new_tokens={max_new_tokens} leaves no room for a prompt in max_seq_len={seq} "
            f"(max_length={max_length}, the model has {max_positions} positions): lower max_new_tokens"
        )
    return LengthPlan(max_seq_len=seq, max_new_tokens=max_new_tokens)


# ---- constructor and request arguments ----------------------------------------------------


def llm_kwargs(backend: str, dtype: str, lengths: LengthPlan, max_batch: int, kv_cache_config) -> dict:
    """Keyword arguments for the chosen LLM class (after `model`).

    Both backends (BaseLlmArgs fields, tensorrt_llm/llmapi/llm_args.py): dtype, max_batch_size,
    max_seq_len, max_input_len, max_num_tokens, gather_generation_logits, kv_cache_config.
    gather_generation_logits=True is required on the TensorRT backend: the C++ executor refuses
    return_generation_logits otherwise ("To return generation logits, gather_generation_logits
    must be enabled in ExecutorConfig", cpp/tensorrt_llm/executor/executorImpl.cpp), and
    _TrtLLM._build_model copies it into ExecutorConfig. On PyTorch, _TorchLLM._build_model passes
    it to the executor as return_logits (TensorRT-LLM's own PyTorch logits test constructs
    LLM(gather_generation_logits=True) with SamplingParams(return_generation_logits=True)).
    PyTorch only (TorchLlmArgs): enable_iter_perf_stats, without which get_stats() is empty there;
    passing it to the TensorRT class would be an invalid argument.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if max_batch < 1:
        raise ValueError(f"max_batch must be at least 1, got {max_batch}")
    kwargs = {
        "dtype": dtype,
        "max_batch_size": max_batch,
        "max_seq_len": lengths.max_seq_len,
        "max_input_len": lengths.max_input_len,
        "max_num_tokens": lengths.max_num_tokens,
        "gather_generation_logits": True,
        "kv_cache_config": kv_cache_config,
    }
    if backend == "pytorch":
        kwargs["enable_iter_perf_stats"] = True
    return kwargs


def kv_cache_kwargs(share_prefix: bool, free_gpu_memory_fraction: float) -> dict:
    """KvCacheConfig(enable_block_reuse, free_gpu_memory_fraction): the block-reuse switch that
    lets an item's prompts reuse the cached blocks of its prefix."""
    if not 0.0 < free_gpu_memory_fraction < 1.0:
        raise ValueError(f"free_gpu_memory_fraction must be in (0, 1), got {free_gpu_memory_fraction}")
    return {"enable_block_reuse": bool(share_prefix), "free_gpu_memory_fraction": float(free_gpu_memory_fraction)}


def score_sampling_kwargs() -> dict:
    """SamplingParams for one score (tensorrt_llm/sampling_params.py fields): one greedy token,
    its logits returned, no detokenisation (the text is never read)."""
    return {"max_tokens": 1, "temperature": 0.0, "return_generation_logits": True, "detokenize": False}


def generation_sampling_kwargs(max_tokens: int) -> dict:
    return {"max_tokens": max_tokens, "temperature": 0.0}
