"""patch-16: GGUFReader opens a GGUF file holding a Q2_0 tensor.

The test writes a tiny valid GGUF v3 file by hand (no GGUFWriter, so the file does not depend
on the constants under test): metadata, a Q2_0 tensor of two rows of one 64-weight block
(2 x 18 bytes) and an F32 tensor after it, each at an offset aligned to general.alignment.
Unpatched, GGUFReader raises ValueError: 42 is not a valid GGMLQuantizationType while building
the tensor list, before any metadata is returned.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

ALIGNMENT = 32
Q2_0_TYPE = 42  # ggml_type GGML_TYPE_Q2_0 (llama.cpp #24448)
Q2_0_FILE_TYPE = 41  # llama_ftype LLAMA_FTYPE_MOSTLY_Q2_0
F32_TYPE = 0
UINT32, STRING = 4, 8  # GGUFValueType
CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
Q2_0_DATA = bytes(range(36))  # 2 blocks x (fp16 scale + 64 two-bit codes)
F32_DATA = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _kv_u32(key: str, value: int) -> bytes:
    return _string(key) + struct.pack("<II", UINT32, value)


def _kv_str(key: str, value: str) -> bytes:
    return _string(key) + struct.pack("<I", STRING) + _string(value)


def _tensor_info(name: str, dims: tuple[int, ...], ggml_type: int, offset: int) -> bytes:
    info = _string(name) + struct.pack("<I", len(dims))
    info += b"".join(struct.pack("<Q", d) for d in dims)
    return info + struct.pack("<IQ", ggml_type, offset)


def _pad(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % ALIGNMENT)


@pytest.fixture
def q2_0_file(tmp_path: Path) -> Path:
    kvs = [
        _kv_str("general.architecture", "llama"),
        _kv_u32("general.alignment", ALIGNMENT),
        _kv_u32("general.file_type", Q2_0_FILE_TYPE),
        _kv_u32("llama.context_length", 4096),
        _kv_str("tokenizer.chat_template", CHAT_TEMPLATE),
    ]
    f32_offset = len(_pad(Q2_0_DATA))  # 64: the Q2_0 data (36 bytes) padded to the alignment
    infos = [
        _tensor_info("blk.0.attn_q.weight", (64, 2), Q2_0_TYPE, 0),  # ggml order: ne0, ne1
        _tensor_info("output_norm.weight", (4,), F32_TYPE, f32_offset),
    ]
    header = b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(kvs))
    body = _pad(header + b"".join(kvs) + b"".join(infos))
    path = tmp_path / "tiny-q2_0.gguf"
    path.write_bytes(body + _pad(Q2_0_DATA) + F32_DATA)
    return path


def test_reader_opens_a_q2_0_file(q2_0_file: Path) -> None:
    from gguf import GGUFReader

    # unpatched: ValueError: np.uint32(42) is not a valid GGMLQuantizationType
    reader = GGUFReader(q2_0_file)

    assert reader.fields["general.architecture"].contents() == "llama"
    assert reader.fields["llama.context_length"].contents() == 4096
    assert reader.fields["tokenizer.chat_template"].contents() == CHAT_TEMPLATE
    assert reader.alignment == ALIGNMENT

    q2, f32 = reader.tensors
    assert q2.name == "blk.0.attn_q.weight"
    assert q2.tensor_type.name == "Q2_0"
    assert int(q2.tensor_type) == Q2_0_TYPE
    assert q2.shape.tolist() == [64, 2]
    assert q2.n_elements == 128
    assert q2.n_bytes == 36  # 2 blocks of 64 weights, 18 bytes each
    assert q2.data.shape == (2, 18)  # the raw blocks, one row per tensor row
    assert q2.data.tobytes() == Q2_0_DATA

    # the tensor after it is found at its aligned offset, so the block size is right
    assert f32.name == "output_norm.weight"
    assert f32.data.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert f32.data_offset - q2.data_offset == 64


def test_constants_name_q2_0() -> None:
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType, LlamaFileType

    assert GGMLQuantizationType(Q2_0_TYPE).name == "Q2_0"
    assert LlamaFileType(Q2_0_FILE_TYPE).name == "MOSTLY_Q2_0"
    assert GGML_QUANT_SIZES[GGMLQuantizationType.Q2_0] == (64, 18)
