"""P(Yes) for images on Qwen2-VL-class checkpoints (qwen2_vl, qwen2_5_vl) through transformers,
with the PIL image processor (no torchvision).

The image is encoded once per item: the prefix — vision start, one image-pad token per merged
patch, vision end, then the item's text — runs once with the KV cache on, and every concept x
template question runs against a copy of that cache in right-padded batches. Qwen2-VL numbers
positions with multimodal RoPE; after the prefix its text positions are shifted by the model's
`rope_deltas`, so the questions get explicit position ids (cache position + delta, equal on the
three RoPE axes). Without sharing, every prompt carries the image and runs from scratch.
"""

from __future__ import annotations

import copy
import inspect
import io
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from polarmem_server.scoring.base import EngineError, EngineInfo, ScoreItem, ScoreRequest, ScoringEngine, prompt_text
from polarmem_server.scoring.prompting import p_yes_at_last, right_pad
from polarmem_server.scoring.yes_no import yes_no_token_ids

VLM_MODEL_TYPES = ("qwen2_vl", "qwen2_5_vl")


def is_vision_language(model_path: str | Path) -> bool:
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(str(model_path)).model_type in VLM_MODEL_TYPES


class VisionLanguageEngine(ScoringEngine):
    reads_images = True

    def __init__(
        self,
        model_path: str | Path,
        device: str = "cpu",
        dtype: str = "float32",
        max_length: int = 4096,
        batch_size: int = 32,
        share_prefix: bool = True,
    ) -> None:
        import torch
        from transformers import AutoConfig, AutoTokenizer
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

        path = str(model_path)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        config = AutoConfig.from_pretrained(path)
        if config.model_type == "qwen2_5_vl":
            from transformers import Qwen2_5_VLForConditionalGeneration as ModelClass
        else:
            from transformers import Qwen2VLForConditionalGeneration as ModelClass
        torch_dtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}.get(dtype)
        if torch_dtype is None:
            raise ValueError(f"dtype must be float32, bfloat16 or float16, got {dtype!r}")
        self._torch = torch
        self.model = ModelClass.from_pretrained(path, dtype=torch_dtype).to(device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.image_processor = Qwen2VLImageProcessorPil.from_pretrained(path)
        self.config = self.model.config
        self.device = device
        self.max_length = max_length
        self.batch_size = batch_size
        self.share_prefix = share_prefix
        self.yes_ids, self.no_ids = yes_no_token_ids(self.tokenizer)
        self.pad_id = (
            self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        )
        self.merge = self.config.vision_config.spatial_merge_size**2
        self._lock = threading.Lock()
        # transformers renamed `past_key_values` to `cache`; accept either.
        self._cache_arg = (
            "cache" if "cache" in inspect.signature(self.model.model.forward).parameters else "past_key_values"
        )
        self.info = EngineInfo(
            "transformers", model=Path(path).name, device=device, details={"share_prefix": share_prefix, "vision": True}
        )

    # ---- inputs ----------------------------------------------------------------------------

    def _image(self, data: bytes):
        from PIL import Image

        try:
            image = Image.open(io.BytesIO(data)).convert("RGB")
        except Exception as exc:  # noqa: BLE001 - any undecodable payload
            raise ValueError(f"content: not a decodable image ({exc})") from exc
        features = self.image_processor(images=[image], return_tensors="pt")
        return features["pixel_values"].to(self.device), features["image_grid_thw"].to(self.device)

    def _prefix(self, item: ScoreItem, grid) -> list[int]:
        ids = []
        if self.tokenizer.bos_token_id is not None:
            ids.append(self.tokenizer.bos_token_id)
        if grid is not None:
            count = int(grid.prod()) // self.merge
            ids += (
                [self.config.vision_start_token_id]
                + [self.config.image_token_id] * count
                + [self.config.vision_end_token_id]
            )
        if item.text.strip():
            ids += self.tokenizer.encode(item.text.strip() + "\n", add_special_tokens=False)
        return ids

    def _suffixes(self, request: ScoreRequest, room: int) -> list[list[int]]:
        suffixes = [
            self.tokenizer.encode(prompt_text(t, c) + "\nAnswer:", add_special_tokens=False)
            for c in request.concepts
            for t in request.templates
        ]
        if suffixes and max(len(s) for s in suffixes) > room:
            raise ValueError(f"the item leaves {room} tokens for a question under max_length={self.max_length}")
        return suffixes

    # ---- scoring ---------------------------------------------------------------------------

    def score(self, requests: Sequence[ScoreRequest]) -> list[np.ndarray]:
        try:
            with self._lock, self._torch.inference_mode():
                return [self._score(r) for r in requests]
        except (ValueError, TypeError):
            raise
        except Exception as exc:  # a model or device failure
            raise EngineError(f"vision-language engine failed: {exc}") from exc

    def _score(self, request: ScoreRequest) -> np.ndarray:
        shape = (len(request.concepts), len(request.templates))
        if not request.prompt_count:
            return np.zeros(shape)
        pixels, grid = self._image(request.item.image) if request.item.image else (None, None)
        prefix = self._prefix(request.item, grid)
        if grid is None:  # text only: drop the end of the text that does not fit
            prefix = prefix[: max(1, self.max_length - 64)]
        suffixes = self._suffixes(request, self.max_length - len(prefix))
        values = (
            self._shared(prefix, suffixes, pixels, grid)
            if self.share_prefix
            else self._unshared(prefix, suffixes, pixels, grid)
        )
        return values.reshape(shape)

    def _mm_types(self, ids):
        return (ids == self.config.image_token_id).int()

    def _shared(self, prefix, suffixes, pixels, grid) -> np.ndarray:
        torch = self._torch
        ids = torch.tensor([prefix], device=self.device)
        extra = {"pixel_values": pixels, "image_grid_thw": grid} if pixels is not None else {}
        out = self.model.model(input_ids=ids, mm_token_type_ids=self._mm_types(ids), use_cache=True, **extra)
        cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
        if cache is None:
            raise RuntimeError("the model returned no key/value cache for the prefix (use_cache=True)")
        delta = self.model.model.rope_deltas if pixels is not None else None
        delta = int(delta.reshape(-1)[0]) if delta is not None else 0
        scores = []
        for start in range(0, len(suffixes), self.batch_size):
            chunk = suffixes[start : start + self.batch_size]
            batch_ids, mask, last = self._right_pad(chunk)
            batch_cache = copy.deepcopy(cache)
            batch_cache.batch_repeat_interleave(len(chunk))
            width = batch_ids.shape[1]
            positions = torch.arange(len(prefix), len(prefix) + width, device=self.device) + delta
            positions = positions.view(1, 1, -1).expand(3, len(chunk), -1)
            full_mask = torch.cat(
                [torch.ones((len(chunk), len(prefix)), dtype=mask.dtype, device=self.device), mask], 1
            )
            hidden = self.model.model(
                input_ids=batch_ids,
                attention_mask=full_mask,
                position_ids=positions,
                use_cache=True,
                **{self._cache_arg: batch_cache},
            ).last_hidden_state
            scores.append(self._read(hidden, last))
        return np.concatenate(scores)

    def _unshared(self, prefix, suffixes, pixels, grid) -> np.ndarray:
        scores = []
        for start in range(0, len(suffixes), self.batch_size):
            chunk = [prefix + s for s in suffixes[start : start + self.batch_size]]
            batch_ids, mask, last = self._right_pad(chunk)
            extra = {}
            if pixels is not None:
                extra = {"pixel_values": pixels.repeat(len(chunk), 1), "image_grid_thw": grid.repeat(len(chunk), 1)}
            hidden = self.model.model(
                input_ids=batch_ids,
                attention_mask=mask,
                mm_token_type_ids=self._mm_types(batch_ids),
                use_cache=False,
                **extra,
            ).last_hidden_state
            scores.append(self._read(hidden, last))
        return np.concatenate(scores)

    def _right_pad(self, sequences: list[list[int]]):
        return right_pad(self._torch, sequences, self.pad_id, self.device)

    def _read(self, hidden, last) -> np.ndarray:
        return p_yes_at_last(self._torch, hidden, last, self.model.lm_head, self.yes_ids, self.no_ids)
