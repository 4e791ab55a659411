"""The TensorRT-LLM engine's arguments and error mapping, checked against TensorRT-LLM's own
signatures on machines where TensorRT-LLM cannot be installed.

The classes below stand for the *signatures* of TensorRT-LLM's API and nothing else: each
constructor has exactly the parameters and performs exactly the keyword checks of the source it
cites (NVIDIA/TensorRT-LLM; file, class and the statement quoted). None of them computes a logit
or a score: their generate() records what it was sent and fails, so every P(Yes) in the test
suite comes from a real model. Where tensorrt_llm imports, tests/unit/test_engine_conformance.py
runs the real thing.
"""

import importlib.util
from dataclasses import dataclass, fields
from typing import Any, Optional

import pytest

from polarmem_server.scoring import ScoreItem, ScoreRequest, create_engine
from polarmem_server.scoring.base import EngineError
from polarmem_server.scoring.tensorrt_llm_api import llm_kwargs, plan_lengths, score_sampling_kwargs
from polarmem_server.scoring.tensorrt_llm_engine import TensorRTLLMEngine
from polarmem_server.scoring.tensorrt_llm_runtime import TrtLlmApi
from tiny_models import build_tiny_llama

TEMPLATES = ("Is there a {c} in this image? Answer Yes or No.", "Can you see a {c} ? Answer Yes or No.")

# ---- TensorRT-LLM 1.x argument fields (tensorrt_llm/llmapi/llm_args.py) ---------------------
# class BaseLlmArgs: the fields both backends accept (the ones relevant here, as declared there).
BASE_LLM_ARGS_FIELDS = {
    "model",
    "tokenizer",
    "tokenizer_mode",
    "skip_tokenizer_init",
    "trust_remote_code",
    "tensor_parallel_size",
    "dtype",
    "revision",
    "tokenizer_revision",
    "load_format",
    "enable_lora",
    "lora_config",
    "kv_cache_config",
    "enable_chunked_prefill",
    "guided_decoding_backend",
    "batched_logits_processor",
    "iter_stats_max_iterations",
    "request_stats_max_iterations",
    "peft_cache_config",
    "scheduler_config",
    "cache_transceiver_config",
    "speculative_config",
    "max_batch_size",
    "max_input_len",
    "max_seq_len",
    "max_beam_width",
    "max_num_tokens",
    "gather_generation_logits",
    "num_postprocess_workers",
    "postprocess_tokenizer_dir",
    "reasoning_parser",
    "decoding_config",
    "mpi_session",
    "backend",
    "return_perf_metrics",
    "orchestrator_type",
}
# class TorchLlmArgs(BaseLlmArgs): PyTorch-only fields ("enable_iter_perf_stats: bool = Field(default=False").
TORCH_ONLY_FIELDS = {
    "garbage_collection_gen0_threshold",
    "sampler_type",
    "enable_iter_perf_stats",
    "enable_iter_req_stats",
    "print_iter_log",
    "disable_overlap_scheduler",
    "kv_cache_dtype",
}
# class TrtLlmArgs(BaseLlmArgs): TensorRT-only fields.
TRT_ONLY_FIELDS = {
    "enable_tqdm",
    "workspace",
    "fail_fast_on_attention_window_too_large",
    "enable_build_cache",
    "extended_runtime_perf_knob_config",
    "calib_config",
    "quant_config",
    "embedding_parallel_mode",
    "fast_build",
    "build_config",
    "enable_prompt_adapter",
    "max_prompt_adapter_token",
    "batching_type",
    "normalize_log_probs",
}


class _BaseLLMSignature:
    """tensorrt_llm/llmapi/llm.py, class BaseLLM.__init__: its parameters, and its keyword check
    ``valid_keys = set(list(llm_args_cls.model_fields.keys()) + ['_mpi_session', 'backend'])`` ...
    ``raise ValueError(f"{self.__class__.__name__} got invalid argument: {key}")``."""

    args_fields: set = set()

    def __init__(
        self,
        model,
        tokenizer=None,
        tokenizer_mode='auto',
        skip_tokenizer_init=False,
        trust_remote_code=False,
        tensor_parallel_size=1,
        dtype="auto",
        revision=None,
        tokenizer_revision=None,
        **kwargs: Any,
    ) -> None:
        valid_keys = self.args_fields | {"_mpi_session", "backend"}
        for key in kwargs:
            if key not in valid_keys:
                raise ValueError(f"{self.__class__.__name__} got invalid argument: {key}")
        self.model, self.dtype, self.kwargs = model, dtype, kwargs
        self.passed = dict(kwargs)  # what the caller gave (a subclass may add to kwargs, as _TorchLLM does)
        self.sent: list = []
        self.failure: Exception = RuntimeError("this signature stand-in computes nothing")
        self.stats: list = []
        self.shut_down = False

    # The methods the engine calls, with the real parameter names (BaseLLM.generate, get_stats,
    # shutdown). They never return model output.
    def generate(
        self,
        inputs,
        sampling_params=None,
        use_tqdm=True,
        lora_request=None,
        prompt_adapter_request=None,
        kv_cache_retention_config=None,
        disaggregated_params=None,
        scheduling_params=None,
        cache_salt=None,
    ):
        self.sent.append((inputs, sampling_params))
        raise self.failure

    def get_stats(self, timeout: Optional[float] = 2) -> list:
        return self.stats

    def shutdown(self) -> None:
        self.shut_down = True


class TorchLLMSignature(_BaseLLMSignature):
    """tensorrt_llm/llmapi/llm.py, class _TorchLLM (1.x ``class LLM(_TorchLLM)``, i.e.
    ``tensorrt_llm.LLM``): ``backend = kwargs.pop("backend", "pytorch")`` then
    ``_validate_args_for_torch_backend``: "The following arguments are specific to TensorRT
    backend and cannot be used with PyTorch backend"."""

    args_fields = BASE_LLM_ARGS_FIELDS | TORCH_ONLY_FIELDS

    def __init__(self, model, **kwargs: Any) -> None:
        passed = dict(kwargs)
        backend = kwargs.pop("backend", "pytorch")
        trtllm_specific_args = [key for key in kwargs if key in TRT_ONLY_FIELDS - TORCH_ONLY_FIELDS]
        if trtllm_specific_args:
            raise ValueError(
                f"The following arguments are specific to TensorRT backend and cannot be used with "
                f"PyTorch backend: {trtllm_specific_args}."
            )
        super().__init__(model, backend=backend, **kwargs)
        self.passed = passed


class TrtLLMSignature(_BaseLLMSignature):
    """tensorrt_llm/_tensorrt_engine/__init__.py: ``from tensorrt_llm.llmapi.llm import _TrtLLM as
    LLM``; _TrtLLM.__init__ passes everything to BaseLLM, which picks TrtLlmArgs when backend is
    neither "pytorch" nor "_autodeploy"."""

    args_fields = BASE_LLM_ARGS_FIELDS | TRT_ONLY_FIELDS


@dataclass
class SamplingParamsSignature:
    """tensorrt_llm/sampling_params.py, @dataclass class SamplingParams (1.x): the fields the
    engine may set, with their declared defaults; an unknown keyword is a TypeError as there."""

    end_id: Optional[int] = None
    pad_id: Optional[int] = None
    max_tokens: int = 32
    temperature: Optional[float] = None
    top_k: Optional[int] = None
    top_p: Optional[float] = None
    logprobs: Optional[int] = None
    return_context_logits: bool = False
    return_generation_logits: bool = False
    exclude_input_from_output: bool = True
    ignore_eos: bool = False
    detokenize: bool = True
    add_special_tokens: bool = True


@dataclass
class KvCacheConfigSignature:
    """tensorrt_llm/llmapi/llm_args.py, class KvCacheConfig: the fields the engine sets (and
    their neighbours), keyword-only like the pydantic model."""

    enable_block_reuse: bool = True
    max_tokens: Optional[int] = None
    max_attention_window: Optional[list] = None
    free_gpu_memory_fraction: Optional[float] = None
    enable_partial_reuse: bool = True
    event_buffer_max_size: int = 0


@dataclass
class LlmArgs012Signature:
    """tensorrt_llm/llmapi/llm_utils.py (~0.11-0.12), @dataclass class LlmArgs, built by
    ``ret = cls(parallel_config=parallel_config, **kwargs)`` in LlmArgs.from_kwargs: every field."""

    model: Any
    parallel_config: Any = None
    tokenizer: Any = None
    skip_tokenizer_init: bool = False
    tokenizer_revision: Optional[str] = None
    dtype: str = "auto"
    revision: Optional[str] = None
    build_config: Any = None
    quant_config: Any = None
    embedding_parallel_mode: str = 'SHARDING_ALONG_VOCAB'
    share_embedding_table: bool = False
    kv_cache_config: Any = None
    peft_cache_config: Any = None
    decoding_config: Any = None
    logits_post_processor_map: Any = None
    scheduler_config: Any = None
    normalize_log_probs: bool = False
    iter_stats_max_iterations: Optional[int] = None
    request_stats_max_iterations: Optional[int] = None
    batching_type: Any = None
    enable_build_cache: Any = False
    enable_tqdm: bool = False


def api_for(backend: str, version: str = "1.2.1") -> TrtLlmApi:
    llm_class = TorchLLMSignature if backend == "pytorch" else TrtLLMSignature
    return TrtLlmApi(
        version=version,
        backend=backend,
        llm_class=llm_class,
        sampling_params=SamplingParamsSignature,
        kv_cache_config=KvCacheConfigSignature,
    )


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def make_engine(tiny_model, backend="pytorch", **options) -> TensorRTLLMEngine:
    return TensorRTLLMEngine(tiny_model, backend=backend, api=api_for(backend), **options)


# ---- the signatures refuse what TensorRT-LLM refuses (so the tests below can fail) ---------


def test_the_signatures_refuse_what_tensorrt_llm_refuses():
    with pytest.raises(ValueError, match="got invalid argument: max_len"):
        TorchLLMSignature(model="m", max_len=10)
    with pytest.raises(ValueError, match="specific to TensorRT backend"):
        TorchLLMSignature(model="m", build_config=object())
    with pytest.raises(ValueError, match="TrtLLMSignature got invalid argument: enable_iter_perf_stats"):
        TrtLLMSignature(model="m", enable_iter_perf_stats=True)
    with pytest.raises(TypeError):
        SamplingParamsSignature(max_new_tokens=1)


# ---- constructor arguments per backend -----------------------------------------------------


def test_pytorch_backend_arguments(tiny_model):
    engine = make_engine(tiny_model, "pytorch")
    llm = engine._llm
    assert isinstance(llm, TorchLLMSignature)
    assert llm.model == str(tiny_model) and llm.dtype == "float32"  # the checkpoint's dtype, explicit
    assert llm.kwargs["gather_generation_logits"] is True
    assert llm.kwargs["enable_iter_perf_stats"] is True  # get_stats() is empty on PyTorch without it
    assert (llm.kwargs["max_seq_len"], llm.kwargs["max_input_len"]) == (2048, 2047)
    assert llm.kwargs["max_batch_size"] == 64 and llm.kwargs["max_num_tokens"] == 8192
    assert "backend" not in llm.passed  # 1.x LLM is PyTorch already; newer releases refuse others
    assert llm.kwargs["kv_cache_config"] == KvCacheConfigSignature(
        enable_block_reuse=True, free_gpu_memory_fraction=0.8
    )


def test_tensorrt_backend_arguments(tiny_model):
    engine = make_engine(tiny_model, "tensorrt", dtype="bfloat16", max_length=1024, share_prefix=False)
    llm = engine._llm
    assert isinstance(llm, TrtLLMSignature)
    assert llm.dtype == "bfloat16"
    # without gather_generation_logits the C++ executor refuses return_generation_logits
    assert llm.kwargs["gather_generation_logits"] is True
    # TrtLlmArgs.max_input_len defaults to 1024: set from the model's limits instead
    assert (llm.kwargs["max_seq_len"], llm.kwargs["max_input_len"]) == (1024, 1023)
    assert "enable_iter_perf_stats" not in llm.kwargs
    assert llm.kwargs["kv_cache_config"].enable_block_reuse is False


def test_each_backends_arguments_are_refused_by_the_other_class(tiny_model):
    lengths = plan_lengths(2048, 2048, 64)
    with pytest.raises(ValueError, match="got invalid argument: enable_iter_perf_stats"):
        TrtLLMSignature(model="m", **llm_kwargs("pytorch", "float16", lengths, 8, None))
    TorchLLMSignature(model="m", **llm_kwargs("tensorrt", "float16", lengths, 8, None))  # a subset: accepted


def test_the_0_12_llm_args_would_raise_type_error(tiny_model):
    """Why 0.11-0.12 are refused up front: their LlmArgs has none of these fields."""
    kwargs = llm_kwargs("tensorrt", "float16", plan_lengths(2048, 2048, 64), 8, None)
    missing = set(kwargs) - {f.name for f in fields(LlmArgs012Signature)}
    assert {"max_batch_size", "max_seq_len", "max_input_len", "gather_generation_logits"} <= missing
    with pytest.raises(TypeError):
        LlmArgs012Signature(model="m", **kwargs)


def test_score_sampling_params_fit_the_dataclass():
    params = SamplingParamsSignature(**score_sampling_kwargs())
    assert (params.max_tokens, params.return_generation_logits, params.detokenize) == (1, True, False)


def test_version_and_limits_are_exposed(tiny_model):
    engine = make_engine(tiny_model, "tensorrt")
    assert engine.version == "1.2.1"
    assert engine.info.name == "tensorrt_llm" and engine.info.model == tiny_model.name
    assert engine.info.details == {
        "tensorrt_llm_version": "1.2.1",
        "backend": "tensorrt",
        "dtype": "float32",
        "share_prefix": True,
        "max_batch": 64,
        "max_seq_len": 2048,
        "max_input_len": 2047,
        "max_new_tokens": 64,
    }


def test_bad_settings_are_refused_before_tensorrt_llm_is_touched(tiny_model):
    with pytest.raises(ValueError, match="backend must be one of pytorch, tensorrt"):
        TensorRTLLMEngine(tiny_model, backend="onnx", api=api_for("pytorch"))
    with pytest.raises(ValueError, match="max_new_tokens=2048 leaves no room"):
        make_engine(tiny_model, max_new_tokens=2048)
    with pytest.raises(ValueError, match="free_gpu_memory_fraction must be in"):
        make_engine(tiny_model, free_gpu_memory_fraction=1.5)
    with pytest.raises(ValueError, match="dtype must be auto or one of"):
        make_engine(tiny_model, dtype="fp8")
    with pytest.raises(ValueError, match="max_batch must be at least 1"):
        TensorRTLLMEngine(tiny_model, max_batch=0)  # refused before TensorRT-LLM is looked for


def test_without_tensorrt_llm_the_engine_is_refused_naming_the_minimum(tiny_model):
    if importlib.util.find_spec("tensorrt_llm") is not None:
        pytest.skip("tensorrt_llm is installed here")
    with pytest.raises(ValueError, match=r"needs the tensorrt_llm package >= 1\.0\.0"):
        create_engine("tensorrt_llm", model=str(tiny_model))


# ---- lengths inside the engine -------------------------------------------------------------


def test_a_very_long_item_leaves_room_for_the_answer_token(tiny_model):
    engine = make_engine(tiny_model)
    prefix, suffixes = engine.prompts.sequences(ScoreRequest(ScoreItem("dog " * 20000), ("dog",), TEMPLATES))
    assert max(len(prefix) + len(s) for s in suffixes) == 2047  # + 1 answer token = max_seq_len 2048


def test_generation_prompts_leave_room_for_max_tokens(tiny_model):
    engine = make_engine(tiny_model)
    with pytest.raises(EngineError):
        engine.generate("Is there a dog ?", ScoreItem("dog " * 20000), max_tokens=64)
    ((inputs, params),) = engine._llm.sent
    assert len(inputs[0]["prompt_token_ids"]) == 2048 - 64
    prefix_text, tail = engine.prompts.split(ScoreItem("dog " * 20000))
    question = engine.prompts.encode("Is there a dog ?" + tail, special=False)
    ids = inputs[0]["prompt_token_ids"]
    assert ids[-len(question) :] == question  # the question is whole: the item's text was cut
    assert ids[0] == engine.prompts.encode(prefix_text, special=True)[0]  # from its end, not its start
    assert params.max_tokens == 64


def test_generation_beyond_the_limits_is_refused(tiny_model):
    engine = make_engine(tiny_model, max_length=64, max_new_tokens=16)
    with pytest.raises(ValueError, match="max_tokens must be between 1 and the engine's max_new_tokens=16"):
        engine.generate("Is there a dog ?", max_tokens=17)
    with pytest.raises(ValueError, match="prompt: 62 tokens, more than the 48 left"):
        engine.generate("dog " * 60, max_tokens=16)
    assert engine._llm.sent == []


# ---- the order prompts are sent in ---------------------------------------------------------


def test_each_items_first_prompt_is_sent_alone_first(tiny_model):
    engine = make_engine(tiny_model)
    requests = [
        ScoreRequest(ScoreItem("a red dog on the grass"), ("dog", "cat"), TEMPLATES),
        ScoreRequest(ScoreItem("big bus"), ("bus",), TEMPLATES),
    ]
    with pytest.raises(EngineError):
        engine.score(requests)
    ((warm, params),) = engine._llm.sent  # the stand-in fails the first call: only the warm batch was sent
    assert len(warm) == 2  # one prompt per item
    expected = [p + s[0] for p, s in (engine.prompts.sequences(r) for r in requests)]
    assert [w["prompt_token_ids"] for w in warm] == expected
    assert (params.max_tokens, params.return_generation_logits) == (1, True)


def test_without_sharing_all_prompts_go_at_once(tiny_model):
    engine = make_engine(tiny_model, share_prefix=False)
    with pytest.raises(EngineError):
        engine.score([ScoreRequest(ScoreItem("a red dog"), ("dog", "cat"), TEMPLATES)])
    ((sent, _),) = engine._llm.sent
    assert len(sent) == 4


def test_empty_requests_send_nothing(tiny_model):
    engine = make_engine(tiny_model)
    out = engine.score([ScoreRequest(ScoreItem("a red dog"), (), TEMPLATES)])
    assert out[0].shape == (0, 2) and engine._llm.sent == []


# ---- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [
        RuntimeError("Encountered an error when fetching new request: exceeds maximum input length"),
        ValueError("The sum of prompt length (3000) ... should not exceed max_seq_len"),
        MemoryError("CUDA out of memory"),
    ],
)
def test_runtime_failures_become_engine_errors(tiny_model, failure):
    engine = make_engine(tiny_model)
    engine._llm.failure = failure
    with pytest.raises(EngineError, match="tensorrt_llm scoring failed: " + type(failure).__name__):
        engine.score([ScoreRequest(ScoreItem("a red dog"), ("dog",), TEMPLATES)])
    with pytest.raises(EngineError, match="tensorrt_llm generation failed"):
        engine.generate("Is there a dog ?")


class _OutputWithoutLogits:
    """What RequestOutput looks like when logits were not gathered (outputs[0].generation_logits
    is None); it carries no score."""

    class _Completion:
        generation_logits = None
        text = ""

    outputs = [_Completion()]


def test_missing_logits_and_short_answers_become_engine_errors(tiny_model):
    engine = make_engine(tiny_model, share_prefix=False)
    request = ScoreRequest(ScoreItem("a red dog"), ("dog",), TEMPLATES)
    engine._llm.generate = lambda prompts, **_: [_OutputWithoutLogits() for _ in prompts]
    with pytest.raises(EngineError, match="no generation logits"):
        engine.score([request])
    engine._llm.generate = lambda prompts, **_: [_OutputWithoutLogits()]
    with pytest.raises(EngineError, match="returned 1 outputs for 2 prompts"):
        engine.score([request])


def test_constructor_failures_are_mapped(tiny_model):
    class Refusing(TorchLLMSignature):
        def __init__(self, model, **kwargs):
            raise ValueError("max_seq_len must be positive")

    class Crashing(TorchLLMSignature):
        def __init__(self, model, **kwargs):
            raise RuntimeError("CUDA driver version is insufficient")

    for cls, error, message in (
        (Refusing, ValueError, "tensorrt_llm refused the pytorch LLM settings"),
        (Crashing, EngineError, "tensorrt_llm could not create the pytorch LLM"),
    ):
        api = TrtLlmApi("1.2.1", "pytorch", cls, SamplingParamsSignature, KvCacheConfigSignature)
        with pytest.raises(error, match=message):
            TensorRTLLMEngine(tiny_model, api=api)


def test_image_content_is_refused(tiny_model):
    engine = make_engine(tiny_model)
    with pytest.raises(ValueError, match="content: engine 'tensorrt_llm' reads text only"):
        engine.score([ScoreRequest(ScoreItem("a dog", b"\x89PNG"), ("dog",), TEMPLATES)])
    assert engine._llm.sent == []


# ---- statistics and shutdown ---------------------------------------------------------------


def test_cache_stats_fold_in_the_runtimes_iteration_stats(tiny_model):
    engine = make_engine(tiny_model)
    engine._llm.stats = ['{"iter": 4, "kvCacheStats": {"reusedBlocks": 12, "missedBlocks": 4, "tokensPerBlock": 32}}']
    stats = engine.cache_stats()
    assert (stats["reused_blocks"], stats["missed_blocks"], stats["hit_rate"]) == (12, 4, 0.75)
    engine._llm.stats = []  # nothing new: the totals stay
    assert engine.cache_stats()["reused_blocks"] == 12
    engine._llm.get_stats = lambda timeout: (_ for _ in ()).throw(RuntimeError("worker gone"))
    with pytest.raises(EngineError, match="get_stats failed"):
        engine.cache_stats()


def test_close_shuts_the_llm_down(tiny_model):
    engine = make_engine(tiny_model)
    engine.close()
    assert engine._llm.shut_down


def test_p_yes_is_never_computed_by_the_stand_ins():
    """Guard for this file: the stand-ins have no way to return logits."""
    llm = TorchLLMSignature(model="m")
    with pytest.raises(RuntimeError, match="computes nothing"):
        llm.generate([{"prompt_token_ids": [1, 2]}])
    assert not hasattr(llm, "logits")
