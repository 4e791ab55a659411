"""8-bit block-wise weights for the MiniLM ONNX graph: every MatMul with a constant weight becomes
ONNX Runtime's MatMulNBits (bits 8, blocks of 32 along K, symmetric, accuracy_level 4).

Why this one and not the quantisations measured beside it (benchmarks/bench_encoder_options.py,
docs/performance.md): dynamic int8 (per-tensor or per-channel weights, all MatMuls or only the FFN
ones) scales a whole activation matrix by one number, which moves the query vectors to cosine
0.990-0.996 of fp32 and changes a third to two thirds of the dev queries' top-10. Here each block
of 32 weights has its own scale and accuracy_level 4 quantises the activations per block of 32 as
well, so the vectors stay at cosine >= 0.999 of fp32 on every dev query, at 0.71-0.85x of fp32's
CPU per query (the weights read per query are a quarter of fp32's).

The quantisation is ONNX Runtime's own kernel (the function its MatMulNBitsQuantizer calls);
this module only rewrites the graph, so it needs onnx and onnxruntime, never torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import numpy as np

BITS = 8
BLOCK_SIZE = 32
ACCURACY_LEVEL = 4  # int8 activations per block (the SQNBitGemm int8 kernels), weights' scales per block


def quantize_weights(source: Path | bytes, target: Path | BinaryIO, block_size: int = BLOCK_SIZE) -> None:
    """Writes `source` (the fp32 export, a file or its bytes) to `target` (a file or a binary
    stream) with every constant-weight MatMul as MatMulNBits
    (`block_size`: weights per scale along K, a power of two >= 16; the benchmark measures others)."""
    import onnx
    from onnx import helper, numpy_helper
    from onnxruntime.capi._pybind_state import quantize_matmul_8bits

    model = onnx.load_model_from_string(source) if isinstance(source, bytes) else onnx.load(str(source))
    graph = model.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    nodes = []
    quantized: set[str] = set()
    for node in graph.node:
        weight = initializers.get(node.input[1]) if node.op_type == "MatMul" else None
        if weight is None or len(weight.dims) != 2:
            nodes.append(node)
            continue
        if weight.name in quantized:  # a weight shared by two MatMuls is packed once
            rows, cols = numpy_helper.to_array(weight).shape
            nodes.append(_nbits_node(helper, node, weight.name, rows, cols, block_size))
            continue
        matrix = numpy_helper.to_array(weight).astype(np.float32)
        rows, cols = matrix.shape  # K, N
        blocks = (rows + block_size - 1) // block_size
        padded = np.pad(matrix, ((0, blocks * block_size - rows), (0, 0)))
        packed = np.zeros((cols, blocks, block_size), dtype=np.uint8)
        scales = np.zeros((cols, blocks), dtype=np.float32)
        zero_points = np.zeros((cols, blocks), dtype=np.uint8)  # unused when symmetric
        quantize_matmul_8bits(packed, np.ascontiguousarray(padded), scales, zero_points, block_size, cols, rows, True)
        graph.initializer.extend(
            [
                numpy_helper.from_array(packed, f"{weight.name}_Q8"),
                numpy_helper.from_array(scales, f"{weight.name}_scales"),
            ]
        )
        nodes.append(_nbits_node(helper, node, weight.name, rows, cols, block_size))
        quantized.add(weight.name)
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input} | {output.name for output in graph.output}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(target) if isinstance(target, Path) else target)


def _nbits_node(helper, node, weight: str, rows: int, cols: int, block_size: int):
    return helper.make_node(
        "MatMulNBits",
        [node.input[0], f"{weight}_Q8", f"{weight}_scales"],
        list(node.output),
        name=f"{node.name}_Q8",
        domain="com.microsoft",
        K=rows,
        N=cols,
        bits=BITS,
        block_size=block_size,
        accuracy_level=ACCURACY_LEVEL,
    )
